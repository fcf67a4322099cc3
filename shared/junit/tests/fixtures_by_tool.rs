//! Every fixture file (JUnit XML written by real test runners, see `fixtures/README.md`):
//! counts, attempts and retries as each tool records them.

use mq_junit::{Attempt, Limits, Report, read_report};
use std::io::Write;

const F: Attempt = Attempt::Failed;
const P: Attempt = Attempt::Passed;
const S: Attempt = Attempt::Skipped;

fn fixture_bytes(name: &str) -> Vec<u8> {
    let path = format!("{}/tests/fixtures/{name}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("{path}: {e}"))
}

fn fixture(name: &str) -> Report {
    read_report(&fixture_bytes(name), &Limits::default()).unwrap_or_else(|e| panic!("{name} {e}"))
}

/// (file, cases, attempts, retries, passed, failed, skipped, passed on retry)
type Counts = (
    &'static str,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
    usize,
);

const COUNTS: [Counts; 14] = [
    ("gotestsum-default.xml", 7, 7, 0, 5, 1, 1, 0),
    ("gotestsum-relative.xml", 7, 7, 0, 4, 2, 1, 0),
    ("gotestsum-rerun.xml", 7, 10, 3, 5, 1, 1, 0),
    ("jest-junit-default.xml", 7, 7, 0, 4, 2, 1, 0),
    ("jest-junit-trunkstyle.xml", 7, 7, 0, 4, 2, 1, 0),
    ("nextest-flakyfail-reportskipped.xml", 7, 16, 9, 5, 1, 1, 2),
    ("nextest-noretry-run1.xml", 6, 6, 0, 4, 2, 0, 0),
    ("nextest-noretry-run2.xml", 6, 6, 0, 4, 2, 0, 0),
    ("nextest-retries-flaky.xml", 6, 11, 5, 5, 1, 0, 1),
    ("pytest-rerunfailures.xml", 3, 7, 4, 2, 1, 0, 1),
    ("pytest-xunit1.xml", 10, 10, 0, 6, 2, 2, 0),
    ("pytest-xunit2.xml", 10, 10, 0, 6, 2, 2, 0),
    ("surefire-2.22-noretry.xml", 5, 5, 0, 1, 3, 1, 0),
    ("surefire-2.22-rerun-flaky.xml", 5, 12, 7, 2, 2, 1, 1),
];

#[test]
fn every_fixture_parses_with_its_counts() {
    let dir = format!("{}/tests/fixtures", env!("CARGO_MANIFEST_DIR"));
    let mut on_disk: Vec<String> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .filter(|n| n.ends_with(".xml"))
        .collect();
    on_disk.sort();
    let listed: Vec<&str> = COUNTS.iter().map(|c| c.0).collect();
    assert_eq!(on_disk, listed, "every fixture file is checked");
    for (name, cases, attempts, retries, passed, failed, skipped, flaky) in COUNTS {
        let r = fixture(name);
        let got = (
            r.cases.len(),
            r.attempts(),
            r.retries(),
            r.count(P),
            r.count(F),
            r.count(S),
            r.passed_on_retry(),
        );
        assert_eq!(
            got,
            (cases, attempts, retries, passed, failed, skipped, flaky),
            "{name}"
        );
    }
}

#[test]
fn nextest_retries_record_flaky_and_rerun_failures_as_attempts() {
    let r = fixture("nextest-retries-flaky.xml");
    let flaky = r.case("flaky_demo", "tests::sometimes_fails").unwrap();
    assert_eq!(flaky.attempts, [F, P], "one <flakyFailure>, then the pass");
    let broken = r.case("flaky_demo", "tests::always_fails").unwrap();
    assert_eq!(broken.attempts, [F; 5], "<failure> and 4 <rerunFailure>");
    assert_eq!(broken.parent, "flaky_demo");
    let integration = r.case("flaky_demo::integration", "integration_ok").unwrap();
    assert_eq!(integration.parent, "flaky_demo::integration");
    assert_eq!(integration.file, None, "nextest writes no file attribute");
}

#[test]
fn nextest_flaky_fail_is_a_pass_on_the_last_attempt() {
    let r = fixture("nextest-flakyfail-reportskipped.xml");
    let case = r.case("flaky_demo", "tests::sometimes_fails").unwrap();
    assert_eq!(case.attempts, [F, F, F, F, P]);
    let integration = r
        .case("flaky_demo::integration", "integration_flaky")
        .unwrap();
    assert_eq!(integration.attempts, [F, P]);
    assert!(
        case.may_have_failed_the_run() && integration.may_have_failed_the_run(),
        "nextest failed the run on them: the elements are written failed"
    );
    let ignored = r.case("flaky_demo", "tests::ignored_test").unwrap();
    assert_eq!(
        ignored.attempts,
        [S],
        "report-skipped = ignored writes <skipped/>"
    );
}

#[test]
fn nextest_two_runs_of_one_commit_disagree() {
    let one = fixture("nextest-noretry-run1.xml");
    let two = fixture("nextest-noretry-run2.xml");
    let outcome = |r: &Report, class: &str, name: &str| r.case(class, name).unwrap().outcome();
    assert_eq!(outcome(&one, "flaky_demo", "tests::sometimes_fails"), F);
    assert_eq!(outcome(&two, "flaky_demo", "tests::sometimes_fails"), P);
    let integration = "flaky_demo::integration";
    assert_eq!(outcome(&one, integration, "integration_flaky"), P);
    assert_eq!(outcome(&two, integration, "integration_flaky"), F);
}

#[test]
fn surefire_reruns_and_flaky_failures() {
    let r = fixture("surefire-2.22-rerun-flaky.xml");
    let class = "com.example.CalcTest";
    assert_eq!(r.case(class, "alwaysFails").unwrap().attempts, [F; 4]);
    assert_eq!(
        r.case(class, "throwsError").unwrap().attempts,
        [F; 4],
        "<error> and 3 <rerunError>"
    );
    assert_eq!(r.case(class, "sometimesFails").unwrap().attempts, [F, P]);
    assert_eq!(r.case(class, "ignored").unwrap().attempts, [S]);
    let plain = fixture("surefire-2.22-noretry.xml");
    assert_eq!(plain.case(class, "throwsError").unwrap().attempts, [F]);
    assert_eq!(plain.cases[0].parent, class, "bare <testsuite> root");
}

#[test]
fn pytest_rerunfailures_duplicates_are_retries() {
    let r = fixture("pytest-rerunfailures.xml");
    let module = "tests.unit.test_demo";
    assert_eq!(
        r.case(module, "test_sometimes_fails").unwrap().attempts,
        [F, P],
        "the empty earlier element is the failed attempt"
    );
    assert_eq!(
        r.case(module, "test_always_fails").unwrap().attempts,
        [F; 4]
    );
    assert_eq!(r.case(module, "test_always_passes").unwrap().attempts, [P]);
    let sometimes = r.case(module, "test_sometimes_fails").unwrap();
    assert!(!sometimes.may_have_failed_the_run(), "passed on its rerun");
}

/// A case written twice in a suite that counts both, the second time as nextest writes a
/// flaky test under `flaky-result = "fail"`: the run failed on it.
#[test]
fn a_repeated_case_keeps_what_its_later_occurrence_says_of_the_run() {
    let xml = r#"<testsuites><testsuite name="bin" tests="2" failures="1">
      <testcase classname="bin" name="t"/>
      <testcase classname="bin" name="t"><failure message="flaky"/><flakyFailure message="x"/></testcase>
    </testsuite></testsuites>"#;
    let report = read_report(xml.as_bytes(), &Limits::default()).unwrap();
    let case = report.case("bin", "t").unwrap();
    assert_eq!(case.attempts, [P, F, P]);
    assert!(case.may_have_failed_the_run());
}

/// jest-junit leaves a `test.todo` out of its suite's `tests` but writes an element for it, so
/// a describe block with one looks like a suite of reruns. Two tests of one title there, the
/// first failing, are not a failure then a pass on rerun: the failure may have failed the run.
#[test]
fn a_written_failure_before_a_pass_in_a_jest_suite_with_a_todo_failed_the_run() {
    let xml = r#"<testsuites><testsuite name="math" tests="3" failures="1">
      <testcase classname="math parses" name="math parses"><failure>boom</failure></testcase>
      <testcase classname="math parses" name="math parses"/>
      <testcase classname="math other" name="math other"/>
      <testcase classname="math todo" name="math todo"/>
    </testsuite></testsuites>"#;
    let report = read_report(xml.as_bytes(), &Limits::default()).unwrap();
    let parses = report.case("math parses", "math parses").unwrap();
    assert!(parses.may_have_failed_the_run(), "{parses:?}");
    let other = report.case("math other", "math other").unwrap();
    assert!(!other.may_have_failed_the_run());
}

#[test]
fn pytest_families_differ_only_in_file_and_suite_name() {
    let one = fixture("pytest-xunit1.xml");
    let two = fixture("pytest-xunit2.xml");
    let module = "tests.unit.test_demo";
    let with_file = one.case(module, "test_param[2]").unwrap();
    assert_eq!(with_file.file.as_deref(), Some("tests/unit/test_demo.py"));
    assert_eq!(with_file.parent, "pytest");
    let without = two.case(module, "test_param[2]").unwrap();
    assert_eq!(
        (without.file.as_deref(), without.parent.as_str()),
        (None, "pyproj")
    );
    assert_eq!(
        one.case(module, "test_fixture_error").unwrap().attempts,
        [F]
    );
    assert_eq!(one.case(module, "test_xfail").unwrap().attempts, [S]);
    assert!(
        one.case("tests.unit.test_demo.TestGroup", "test_in_class")
            .is_some()
    );
}

#[test]
fn gotestsum_reruns_are_repeated_cases_and_subtests_are_cases() {
    let r = fixture("gotestsum-rerun.xml");
    let pkg = "example.com/goproj/pkg/calc";
    assert_eq!(r.case(pkg, "TestAlwaysFails").unwrap().attempts, [F; 4]);
    assert_eq!(r.case(pkg, "TestSometimes").unwrap().attempts, [P]);
    let plain = fixture("gotestsum-default.xml");
    for name in ["TestTable/one", "TestTable/two", "TestTable"] {
        assert_eq!(plain.case(pkg, name).unwrap().attempts, [P], "{name}");
    }
    let relative = fixture("gotestsum-relative.xml");
    assert_eq!(
        relative.case("pkg/calc", "TestSometimes").unwrap().attempts,
        [F]
    );
}

#[test]
fn jest_names_files_and_undefined_suites() {
    let default = fixture("jest-junit-default.xml");
    let case = default.case(" retried flaky", " retried flaky").unwrap();
    assert_eq!(case.parent, "undefined", "a file without describe");
    // jest.retryTimes retries are invisible: only the final result is written.
    assert_eq!(case.attempts, [P]);
    // test.todo is written as an empty (passing-looking) element by this version.
    assert_eq!(
        default
            .case("math todo item", "math todo item")
            .unwrap()
            .attempts,
        [P]
    );
    let trunk = fixture("jest-junit-trunkstyle.xml");
    let deep = trunk.case("math nested", "deep test").unwrap();
    assert_eq!(deep.file.as_deref(), Some("src/__tests__/math.test.js"));
    assert_eq!(trunk.case("math", "skipped").unwrap().attempts, [S]);
    assert_eq!(trunk.case("", "retried flaky").unwrap().parent, "undefined");
}

#[test]
fn gzip_reports_parse_like_plain_ones() {
    let plain = fixture_bytes("surefire-2.22-rerun-flaky.xml");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(&plain).unwrap();
    let compressed = gz.finish().unwrap();
    assert!(mq_junit::is_gzip(&compressed));
    let limits = Limits::default();
    assert_eq!(
        read_report(&compressed, &limits).unwrap(),
        read_report(&plain, &limits).unwrap()
    );
}

#[test]
fn gzip_bombs_stop_at_the_limit() {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    gz.write_all(&vec![b' '; 4 * 1024 * 1024]).unwrap();
    let bomb = gz.finish().unwrap();
    let limits = Limits {
        max_xml_bytes: 1024 * 1024,
        ..Limits::default()
    };
    let err = read_report(&bomb, &limits).unwrap_err();
    assert_eq!(
        err.to_string(),
        "decompresses past the upload's limit of 1048576 bytes of XML"
    );
    let broken = read_report(&[0x1f, 0x8b, 0, 1, 2], &limits).unwrap_err();
    assert!(
        broken.to_string().starts_with("is not valid gzip"),
        "{broken}"
    );
}

#[test]
fn hostile_or_foreign_documents_are_refused_with_a_reason() {
    let limits = Limits::default();
    let laughs = br#"<?xml version="1.0"?><!DOCTYPE x [<!ENTITY a "aaaaaaaaaa"><!ENTITY b "&a;&a;&a;&a;&a;&a;">]><testsuite name="&b;"/>"#;
    let err = read_report(laughs, &limits).unwrap_err();
    assert!(err.to_string().contains("<!DOCTYPE>"), "{err}");
    let deep = format!("{}{}", "<testsuite>".repeat(40), "</testsuite>".repeat(40));
    let err = read_report(deep.as_bytes(), &limits).unwrap_err();
    assert_eq!(err.to_string(), "nests elements deeper than 32 levels");
    let err = read_report(b"<html><body/></html>", &limits).unwrap_err();
    assert!(
        err.to_string().starts_with("is not a JUnit report"),
        "{err}"
    );
    let err = read_report(b"<testsuite><testcase name='a'>", &limits).unwrap_err();
    assert!(
        err.to_string().starts_with("is not well-formed XML"),
        "{err}"
    );
    let err = read_report(&[0xff, 0xfe, b'<'], &limits).unwrap_err();
    assert!(err.to_string().starts_with("is not UTF-8"), "{err}");
}

#[test]
fn long_test_names_are_refused_with_their_position() {
    let long = "x".repeat(4097);
    let xml = format!(
        r#"<testsuite name="s"><testcase name="ok" classname="c"/><testcase name="t" classname="{long}"/></testsuite>"#
    );
    let err = read_report(xml.as_bytes(), &Limits::default()).unwrap_err();
    assert_eq!(
        err.to_string(),
        "test case 2 has a classname longer than 4096 bytes"
    );
    let fits = xml.replace(&long, &"x".repeat(4096));
    assert_eq!(
        read_report(fits.as_bytes(), &Limits::default())
            .unwrap()
            .cases
            .len(),
        2
    );
}

/// Surefire formats durations with grouped digits: a suite or test over 1,000 s is written
/// `time="1,234.567"`. It reads as the same report.
#[test]
fn surefire_durations_over_a_thousand_seconds_read_alike() {
    let name = "surefire-2.22-noretry.xml";
    let plain = String::from_utf8(fixture_bytes(name)).unwrap();
    let grouped = plain
        .replacen(r#"time="0.125""#, r#"time="1,234.567""#, 1)
        .replacen(r#"time="0.008""#, r#"time="2,001.5""#, 1);
    assert_ne!(grouped, plain);
    let report = read_report(grouped.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(report, fixture(name));
}

/// The same case in two `<testsuite>` elements is two cases, not a retry: jest-junit names
/// every file without a top-level `describe` "undefined", and writes no file.
#[test]
fn the_same_case_in_two_suite_elements_is_not_a_retry() {
    let xml = r#"<testsuites>
      <testsuite name="undefined" tests="1"><testcase classname=" renders" name=" renders"/></testsuite>
      <testsuite name="undefined" tests="1"><testcase classname=" renders" name=" renders"/></testsuite>
    </testsuites>"#;
    let report = read_report(xml.as_bytes(), &Limits::default()).unwrap();
    let attempts: Vec<&[Attempt]> = report.cases.iter().map(|c| &c.attempts[..]).collect();
    assert_eq!(attempts, [&[P][..], &[P][..]]);
    assert_eq!(report.passed_on_retry(), 0);
}

/// `go test -count=2` writes each run as its own `<testcase>`, and counts them all in the
/// suite's `tests`: two passes are two passes, not a failure then a pass.
#[test]
fn repeated_runs_a_suite_counts_keep_their_outcomes() {
    let xml = r#"<testsuites><testsuite name="pkg" tests="2" failures="0">
      <testcase classname="pkg" name="TestA"/><testcase classname="pkg" name="TestA"/>
    </testsuite></testsuites>"#;
    let report = read_report(xml.as_bytes(), &Limits::default()).unwrap();
    assert_eq!(report.cases.len(), 1);
    assert_eq!(report.cases[0].attempts, [P, P]);
    assert_eq!(report.passed_on_retry(), 0);
}
