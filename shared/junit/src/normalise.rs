//! From the parser's suites and cases to one [`CaseRun`] per test case, with its attempts in
//! the order they ran.

use junit_parser::{RerunOrFlakyKind, TestCase, TestStatus, TestSuite, TestSuites};
use std::collections::HashMap;

/// The outcome of one attempt at running a test case. An `<error>` is a failed attempt.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Attempt {
    Passed,
    Failed,
    Skipped,
}

/// One test case of a report and every attempt at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaseRun {
    /// The `name` attribute, as written.
    pub name: String,
    /// The `classname` attribute; empty when absent.
    pub classname: String,
    /// The `file` attribute, when the runner writes one.
    pub file: Option<String>,
    /// The name of the innermost `<testsuite>` around the case.
    pub parent: String,
    /// Attempts in the order they ran; never empty. The last one is the final outcome.
    pub attempts: Vec<Attempt>,
    /// An occurrence failed that the report does not write as retried, so the runner may
    /// have counted that failure whatever came after it: the case was written more than once
    /// in a `<testsuite>` that counts every occurrence as a test (`go test -count=2`,
    /// gotestsum's reruns, two jest tests of one title); or an occurrence written with its
    /// own `<failure>` came before another in a suite of reruns (pytest-rerunfailures writes
    /// earlier attempts empty: a written failure there is two tests of one title beside a
    /// `test.todo`, which jest-junit leaves out of `tests`); or the element is written failed
    /// although its last attempt passed (nextest's `flaky-result = "fail"`).
    pub failed_occurrence: bool,
}

impl CaseRun {
    /// The final outcome: that of the last attempt.
    pub fn outcome(&self) -> Attempt {
        self.attempts.last().copied().unwrap_or(Attempt::Skipped)
    }

    /// Attempts after the first.
    pub fn retries(&self) -> usize {
        self.attempts.len().saturating_sub(1)
    }

    /// Failed at least once and passed at the end: flaky within one run.
    pub fn passed_on_retry(&self) -> bool {
        self.outcome() == Attempt::Passed && self.attempts.contains(&Attempt::Failed)
    }

    /// Whether the runner may have failed on this case: its final attempt failed, or an
    /// occurrence did that is not written as retried ([`Self::failed_occurrence`]).
    pub fn may_have_failed_the_run(&self) -> bool {
        self.outcome() == Attempt::Failed || self.failed_occurrence
    }
}

/// Every test case of one report, in the order each first appears.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Report {
    pub cases: Vec<CaseRun>,
}

impl Report {
    /// Attempts over every case.
    pub fn attempts(&self) -> usize {
        self.cases.iter().map(|c| c.attempts.len()).sum()
    }

    /// Retries over every case.
    pub fn retries(&self) -> usize {
        self.cases.iter().map(CaseRun::retries).sum()
    }

    /// Cases whose final outcome is `outcome`.
    pub fn count(&self, outcome: Attempt) -> usize {
        self.cases.iter().filter(|c| c.outcome() == outcome).count()
    }

    /// Cases that passed on a retry.
    pub fn passed_on_retry(&self) -> usize {
        self.cases.iter().filter(|c| c.passed_on_retry()).count()
    }

    /// The case with this name (and classname), for tests and lookups.
    pub fn case(&self, classname: &str, name: &str) -> Option<&CaseRun> {
        self.cases
            .iter()
            .find(|c| c.classname == classname && c.name == name)
    }
}

/// Normalises parsed suites. A test case written more than once in the same `<testsuite>`
/// element is one case retried, its occurrences attempts in order. When the suite counts
/// fewer tests than it has `<testcase>` elements, the repetitions are reruns written as extra
/// elements: runners re-run only what failed, so every occurrence before the last is a failed
/// attempt, even when written without a `<failure>` (pytest-rerunfailures writes earlier
/// attempts as empty elements). When it counts them all (`go test -count=2`), each occurrence
/// keeps its own outcome. The same case in two `<testsuite>` elements (two files of
/// jest-junit named alike) is two cases.
pub fn report(suites: &TestSuites) -> Report {
    let mut cases: Vec<CaseRun> = Vec::new();
    type Key = (usize, String, String, String, Option<String>);
    let mut index: HashMap<Key, usize> = HashMap::new();
    let mut visit = |element: usize, suite: &TestSuite, case: &TestCase| {
        let run = case_run(&suite.name, case);
        let key = (
            element,
            run.parent.clone(),
            run.classname.clone(),
            run.name.clone(),
            run.file.clone(),
        );
        let reruns = (suite.tests as usize) < suite.cases.len();
        match index.get(&key) {
            Some(&i) => retried(&mut cases[i], run, reruns),
            None => {
                index.insert(key, cases.len());
                cases.push(run);
            }
        }
    };
    let mut elements = 0;
    for suite in &suites.suites {
        walk(suite, &mut elements, &mut visit);
    }
    Report { cases }
}

/// Visits every case of `suite` and the suites in it, each with the number of its
/// `<testsuite>` element in document order (`elements` counts them).
fn walk(
    suite: &TestSuite,
    elements: &mut usize,
    visit: &mut impl FnMut(usize, &TestSuite, &TestCase),
) {
    let this = *elements;
    *elements += 1;
    for case in &suite.cases {
        visit(this, suite, case);
    }
    for inner in &suite.suites {
        walk(inner, elements, visit);
    }
}

/// A later occurrence of a case. Written as a rerun (`reruns`), what came before it was a
/// failed attempt; otherwise a failure of either occurrence is one of its own
/// ([`CaseRun::failed_occurrence`]).
fn retried(earlier: &mut CaseRun, later: CaseRun, reruns: bool) {
    earlier.failed_occurrence |= later.failed_occurrence;
    let later = later.attempts;
    if reruns {
        match earlier.attempts.last_mut() {
            Some(last) if *last == Attempt::Passed => *last = Attempt::Failed,
            Some(Attempt::Failed) => earlier.failed_occurrence = true,
            _ => {}
        }
    } else {
        let failed = |attempts: &[Attempt]| attempts.last() == Some(&Attempt::Failed);
        earlier.failed_occurrence |= failed(&earlier.attempts) || failed(&later);
    }
    earlier.attempts.extend(later);
}

fn case_run(parent: &str, case: &TestCase) -> CaseRun {
    let attempts = attempts(case);
    let written_failed = matches!(case.status, TestStatus::Failure(_) | TestStatus::Error(_));
    CaseRun {
        name: case.original_name.clone(),
        classname: case.classname.clone().unwrap_or_default(),
        file: case.file.clone().filter(|f| !f.is_empty()),
        parent: parent.to_owned(),
        failed_occurrence: written_failed && attempts.last() == Some(&Attempt::Passed),
        attempts,
    }
}

/// The attempts one `<testcase>` element records.
///
/// - passed, with `<flakyFailure>`s: each one a failed attempt, then the pass (Surefire,
///   nextest);
/// - failed, with `<rerunFailure>`s: the failure and each rerun failed;
/// - failed with only `<flakyFailure>`s: nextest's `flaky-result = "fail"`, which reports a
///   test that passed on its last attempt as failed; the attempts are the flaky failures and
///   the final pass.
fn attempts(case: &TestCase) -> Vec<Attempt> {
    let flaky = case.reruns.iter().filter(|r| is_flaky(r.kind)).count();
    let reruns = case.reruns.len() - flaky;
    let failed = |n: usize| vec![Attempt::Failed; n];
    match &case.status {
        TestStatus::Success => [failed(flaky + reruns), vec![Attempt::Passed]].concat(),
        TestStatus::Skipped(_) => [failed(flaky + reruns), vec![Attempt::Skipped]].concat(),
        TestStatus::Failure(_) | TestStatus::Error(_) if flaky > 0 && reruns == 0 => {
            [failed(flaky), vec![Attempt::Passed]].concat()
        }
        TestStatus::Failure(_) | TestStatus::Error(_) => failed(1 + flaky + reruns),
    }
}

fn is_flaky(kind: RerunOrFlakyKind) -> bool {
    matches!(
        kind,
        RerunOrFlakyKind::FlakyFailure | RerunOrFlakyKind::FlakyError
    )
}
