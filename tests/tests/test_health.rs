//! Test health over HTTP: uploads of real JUnit files, the unhealthy and quarantined lists,
//! pagination, quarantine, the CI check, tickets, S3 uploads and time-based recovery.

use e2e::health::{
    Run, fixture, form, generated_report, health_body, names, sha, unhealthy, upload,
};
use e2e::{ACME, Backend, TestEnv, UMBRELLA, on_both_stores};
use mq_core::time::Timestamp;
use mq_lambda::s3::UploadBucket;
use mq_service::test_health::recover;
use mq_service::{App, Clock, SystemClock};
use serde_json::{Value, json};
use std::collections::HashSet;
use std::sync::Arc;

on_both_stores!(
    two_commits_of_real_reports_list_flaky_and_broken_tests,
    two_runs_of_one_commit_in_one_upload_are_flaky_in_either_order,
    listed_tests_carry_every_field,
    codeowners_and_impacted_pull_requests,
    quarantine_one_test_and_ci_asks_which_failures_are_quarantined,
    auto_quarantine_takes_flaky_tests,
    page_through_250_tests_in_pages_of_100,
    pages_stay_whole_when_tests_arrive_between_requests,
    pages_stay_whole_when_a_test_leaves_the_list_between_requests,
    page_size_must_be_1_to_100,
    other_organisations_get_not_found,
    uploads_are_idempotent_by_upload_id,
    an_upload_retried_with_its_idempotency_key_is_replayed,
    infrastructure_failures_are_not_evidence,
    a_report_of_a_dead_runner_after_a_passing_one_is_not_evidence,
    two_tests_named_alike_in_one_report_are_not_a_retry,
    bad_uploads_are_refused_and_change_nothing,
    settings_are_validated_and_name_the_field,
    tickets_link_to_test_cases,
    large_reports_go_through_s3,
    an_upload_out_of_time_is_finished_when_sent_again,
    flaky_tests_recover_after_seven_days,
    a_failure_checked_without_a_variant_matches_its_one_known_variant,
    a_variant_ci_no_longer_runs_is_not_matched,
);

/// Commit A ran twice without retries (nextest run 1, run 2), commit B once with retries.
async fn upload_two_commits(env: &TestEnv) {
    for (run, file) in [
        (Run::main("A", "a-1"), "nextest-noretry-run1.xml"),
        (Run::main("A", "a-2"), "nextest-noretry-run2.xml"),
        (Run::main("B", "b-1"), "nextest-retries-flaky.xml"),
    ] {
        let r = upload(env, &run, &[], &[(file, fixture(file))]).await;
        assert_eq!(r.status, 200, "{file}: {:?}", r.body);
    }
}

async fn two_commits_of_real_reports_list_flaky_and_broken_tests(env: TestEnv) {
    upload_two_commits(&env).await;
    let flaky = unhealthy(&env, "FLAKY", 100, "").await;
    assert_eq!(
        names(&flaky),
        ["integration_flaky", "tests::sometimes_fails"]
    );
    let broken = unhealthy(&env, "broken", 100, "").await;
    assert_eq!(names(&broken), ["tests::always_fails"]);
    let reason = broken["tests"][0]["status"]["reason"].as_str().unwrap();
    assert!(reason.starts_with("broken: the last 3 results"), "{reason}");
    for t in flaky["tests"].as_array().unwrap() {
        let reason = t["status"]["reason"].as_str().unwrap();
        assert!(reason.starts_with("flaky: "), "{reason}");
    }
    assert_eq!(flaky["page"]["total_rows"], 2);
}

/// The two runs of one commit sent together in one upload: `integration_flaky` passed in
/// the first report and failed in the second, `tests::sometimes_fails` the other way round.
/// Each is FLAKY, whichever order its attempts came in, as when they come in two uploads.
async fn two_runs_of_one_commit_in_one_upload_are_flaky_in_either_order(env: TestEnv) {
    let files: Vec<(&str, Vec<u8>)> = ["nextest-noretry-run1.xml", "nextest-noretry-run2.xml"]
        .into_iter()
        .map(|name| (name, fixture(name)))
        .collect();
    let r = upload(&env, &feature_run("a"), &[], &files).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let flaky = unhealthy(&env, "FLAKY", 100, "").await;
    assert_eq!(
        names(&flaky),
        ["integration_flaky", "tests::sometimes_fails"]
    );
}

/// A run of a feature branch, on a commit of its own.
fn feature_run(id: &str) -> Run<'_> {
    Run {
        commit: id,
        branch: "feature",
        upload_id: id,
        pr: None,
    }
}

async fn listed_tests_carry_every_field(env: TestEnv) {
    upload_two_commits(&env).await;
    let page = unhealthy(&env, "BROKEN", 10, "").await;
    let t = &page["tests"][0];
    let fields = [
        "id",
        "repository",
        "html_url",
        "name",
        "variant",
        "status",
        "codeowners",
        "pull_requests_impacted_last_7d",
        "quarantined",
        "file_path",
        "parent",
        "classname",
    ];
    for f in fields {
        assert!(t.get(f).is_some(), "missing {f} in {t}");
    }
    assert_eq!(
        t["repository"]["html_url"],
        "https://github.com/acme/rocket"
    );
    assert_eq!(
        (t["classname"].as_str(), t["parent"].as_str()),
        (Some("flaky_demo"), Some("flaky_demo"))
    );
    assert_eq!(t["quarantined"], false);
    assert_eq!(
        uuid::Uuid::parse_str(t["id"].as_str().unwrap())
            .unwrap()
            .get_version_num(),
        5
    );
    let at = t["status"]["timestamp"].as_str().unwrap();
    assert!(
        Timestamp::parse_rfc3339(at).is_some() && at.ends_with('Z'),
        "{at}"
    );
    let p = &page["page"];
    assert_eq!(
        (
            p["total_rows"].as_u64(),
            p["total_pages"].as_u64(),
            p["page_index"].as_u64()
        ),
        (Some(1), Some(1), Some(0))
    );
    assert_eq!(
        (p["next_page_token"].as_str(), p["prev_page_token"].as_str()),
        (Some(""), Some(""))
    );
}

async fn codeowners_and_impacted_pull_requests(env: TestEnv) {
    // A monorepo's CODEOWNERS of 2 MB (GitHub accepts up to 3 MB): stored (compressed) in one item.
    let mut owners = String::from("* @acme/everyone\n");
    for i in 0..45_000 {
        owners.push_str(&format!(
            "/services/team-{}/module-{i}/ @acme/team-{}\n",
            i % 300,
            i % 300
        ));
    }
    owners.push_str("/tests/unit/ @acme/qa @octocat\n");
    assert!(owners.len() > 2_000_000, "{}", owners.len());
    let owners = owners.as_str();
    let file = "pytest-xunit1.xml";
    for (i, commit) in ["C1", "C2", "C3"].iter().enumerate() {
        let id = format!("main-{i}");
        let extra: &[(&str, &str)] = if i == 0 {
            &[("codeowners", owners)]
        } else {
            &[]
        };
        let r = upload(
            &env,
            &Run::main(commit, &id),
            extra,
            &[(file, fixture(file))],
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    for (pr, commit) in [(42, "P1"), (43, "P2")] {
        let id = format!("pr-{pr}");
        let run = Run {
            commit,
            branch: "feature/x",
            upload_id: &id,
            pr: Some(pr),
        };
        assert_eq!(
            upload(&env, &run, &[], &[(file, fixture(file))])
                .await
                .status,
            200
        );
    }
    let page = unhealthy(&env, "BROKEN", 10, "").await;
    assert_eq!(names(&page), ["test_always_fails", "test_fixture_error"]);
    let t = &page["tests"][0];
    assert_eq!(t["codeowners"], json!(["@acme/qa", "@octocat"]));
    assert_eq!(t["file_path"], "tests/unit/test_demo.py");
    assert_eq!(
        t["html_url"],
        "https://github.com/acme/rocket/blob/HEAD/tests/unit/test_demo.py"
    );
    assert_eq!(t["pull_requests_impacted_last_7d"], 2);
}

async fn set_settings(env: &TestEnv, extra: Value) -> Value {
    env.ok("flaky-tests/update-settings", &health_body(extra))
        .await
}

async fn check(env: &TestEnv, failed: Value) -> Value {
    env.ok(
        "flaky-tests/check-quarantined",
        &health_body(json!({"failed_tests": failed})),
    )
    .await
}

async fn id_of(env: &TestEnv, status: &str, name: &str) -> String {
    let page = unhealthy(env, status, 100, "").await;
    let t = page["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["name"] == name);
    t.unwrap_or_else(|| panic!("{name} not {status}"))["id"]
        .as_str()
        .unwrap()
        .to_owned()
}

async fn quarantine_one_test_and_ci_asks_which_failures_are_quarantined(env: TestEnv) {
    upload_two_commits(&env).await;
    let broken = id_of(&env, "BROKEN", "tests::always_fails").await;
    let settings = set_settings(
        &env,
        json!({"quarantining": true, "test_overrides": [
            {"test_case_id": broken, "quarantine": "always_quarantine"}
        ]}),
    )
    .await;
    assert_eq!(settings["quarantining"], true);
    assert_eq!(settings["auto_quarantine"], false);
    assert_eq!(
        settings["test_overrides"][0]["quarantine"],
        "ALWAYS_QUARANTINE"
    );

    let body = health_body(json!({"page_query": {"page_size": 10}}));
    let list = env.ok("flaky-tests/list-quarantined-tests", &body).await;
    assert_eq!(names(&list), ["tests::always_fails"]);
    let q = &list["quarantined_tests"][0];
    assert_eq!(q["test_case_id"], broken.as_str());
    for f in [
        "parent",
        "file",
        "classname",
        "codeowners",
        "quarantined_at",
        "status_last_updated_at",
        "variant",
    ] {
        assert!(q.get(f).is_some(), "missing {f}");
    }

    let failures = json!([
        {"name": "tests::always_fails", "classname": "flaky_demo", "parent": "flaky_demo"},
        {"name": "tests::sometimes_fails", "classname": "flaky_demo", "parent": "flaky_demo"},
    ]);
    let answer = check(&env, failures.clone()).await;
    assert_eq!(answer["all_quarantined"], false);
    assert_eq!(
        (
            answer["quarantined_count"].as_u64(),
            answer["unquarantined_count"].as_u64()
        ),
        (Some(1), Some(1))
    );
    assert_eq!(answer["tests"][0]["quarantined"], true);
    assert_eq!(answer["tests"][1]["known"], true);
    let only_quarantined = check(&env, json!([failures[0]])).await;
    assert_eq!(only_quarantined["all_quarantined"], true, "CI may pass");
    let unknown = check(&env, json!([{"name": "never_seen"}])).await;
    assert_eq!(
        (
            unknown["tests"][0]["known"].as_bool(),
            unknown["all_quarantined"].as_bool()
        ),
        (Some(false), Some(false))
    );

    let flaky = unhealthy(&env, "BROKEN", 10, "").await;
    assert_eq!(flaky["tests"][0]["quarantined"], true);
}

async fn auto_quarantine_takes_flaky_tests(env: TestEnv) {
    upload_two_commits(&env).await;
    let body = health_body(json!({"page_query": {"page_size": 10}}));
    set_settings(&env, json!({"quarantining": true})).await;
    let list = env.ok("flaky-tests/list-quarantined-tests", &body).await;
    assert_eq!(list["page"]["total_rows"], 0, "auto-quarantine is off");
    env.clock.advance_minutes(30);
    let before = env.clock.now();
    set_settings(&env, json!({"auto_quarantine": true})).await;
    let after = env.clock.now();
    let list = env.ok("flaky-tests/list-quarantined-tests", &body).await;
    assert_eq!(
        names(&list),
        ["integration_flaky", "tests::sometimes_fails"],
        "flaky, never broken"
    );
    let time = |v: &Value| Timestamp::parse_rfc3339(v.as_str().unwrap()).unwrap();
    for q in list["quarantined_tests"].as_array().unwrap() {
        let at = time(&q["quarantined_at"]);
        assert!(
            before <= at && at <= after,
            "when auto-quarantine was turned on: {q}"
        );
        assert!(
            time(&q["status_last_updated_at"]) < before,
            "FLAKY before that: {q}"
        );
    }
    let flaky = id_of(&env, "FLAKY", "integration_flaky").await;
    set_settings(
        &env,
        json!({"test_overrides": [{"test_case_id": flaky, "quarantine": "NEVER_QUARANTINE"}]}),
    )
    .await;
    let list = env.ok("flaky-tests/list-quarantined-tests", &body).await;
    assert_eq!(names(&list), ["tests::sometimes_fails"]);
    set_settings(&env, json!({"quarantining": false})).await;
    let list = env.ok("flaky-tests/list-quarantined-tests", &body).await;
    assert_eq!(list["page"]["total_rows"], 0, "quarantining off");
}

/// Uploads `n` tests that pass on a retry, beside as many that pass (an upload where nearly
/// every test failed once is an infrastructure failure, and no evidence).
async fn upload_flaky(env: &TestEnv, prefix: &str, n: usize, upload_id: &str) {
    let flaky = generated_report(prefix, n, "flaky");
    let passing = generated_report(&format!("{prefix}Ok"), n, "pass");
    let files = [("flaky.xml", flaky), ("passing.xml", passing)];
    let r = upload(env, &Run::main("F", upload_id), &[], &files).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    assert_eq!(r.body["passed_on_retry"], n as u64);
}

async fn page_through_250_tests_in_pages_of_100(env: TestEnv) {
    upload_flaky(&env, "Flaky", 250, "gen-250").await;
    let mut seen = Vec::new();
    let mut token = String::new();
    let mut pages = Vec::new();
    loop {
        let page = unhealthy(&env, "FLAKY", 100, &token).await;
        assert_eq!(page["page"]["total_rows"], 250);
        assert_eq!(page["page"]["total_pages"], 3);
        assert_eq!(page["page"]["page_index"], pages.len() as u64);
        seen.extend(
            page["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["id"].as_str().unwrap().to_owned()),
        );
        token = page["page"]["next_page_token"].as_str().unwrap().to_owned();
        pages.push(page);
        if token.is_empty() {
            break;
        }
    }
    let sizes: Vec<usize> = pages
        .iter()
        .map(|p| p["tests"].as_array().unwrap().len())
        .collect();
    assert_eq!(sizes, [100, 100, 50]);
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(
        (seen.len(), unique.len()),
        (250, 250),
        "no duplicates, no gaps"
    );
    let mut sorted = seen.clone();
    sorted.sort();
    assert_eq!(seen, sorted, "in test case id order");
    assert_eq!(pages[0]["page"]["prev_page_token"], "");
    // Tokens round-trip: back from the third page is the second, back again the first.
    let back = unhealthy(
        &env,
        "FLAKY",
        100,
        pages[2]["page"]["prev_page_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(back["tests"], pages[1]["tests"]);
    assert_eq!(back["page"]["page_index"], 1);
    let first = unhealthy(
        &env,
        "FLAKY",
        100,
        back["page"]["prev_page_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(first["tests"], pages[0]["tests"]);
    let last = unhealthy(
        &env,
        "FLAKY",
        100,
        pages[0]["page"]["last_page_token"].as_str().unwrap(),
    )
    .await;
    assert_eq!(last["tests"], pages[2]["tests"]);
    assert_eq!(
        (
            last["page"]["page_index"].as_u64(),
            last["page"]["next_page_token"].as_str()
        ),
        (Some(2), Some(""))
    );
    // A token of another list is refused.
    let wrong = health_body(
        json!({"status": "BROKEN", "page_query": {"page_size": 100, "page_token": token_of(&pages[0])}}),
    );
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(ACME), &wrong)
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_REQUEST"));
}

fn token_of(page: &Value) -> String {
    page["page"]["next_page_token"].as_str().unwrap().to_owned()
}

async fn pages_stay_whole_when_tests_arrive_between_requests(env: TestEnv) {
    upload_flaky(&env, "Old", 120, "old").await;
    let first = unhealthy(&env, "FLAKY", 50, "").await;
    upload_flaky(&env, "New", 40, "new").await;
    let mut seen: Vec<String> = Vec::new();
    let mut page = first;
    loop {
        seen.extend(
            page["tests"]
                .as_array()
                .unwrap()
                .iter()
                .map(|t| t["name"].as_str().unwrap().to_owned()),
        );
        let token = token_of(&page);
        if token.is_empty() {
            break;
        }
        page = unhealthy(&env, "FLAKY", 50, &token).await;
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(unique.len(), seen.len(), "no test twice");
    let old = seen.iter().filter(|n| n.starts_with("Old")).count();
    assert_eq!(
        old, 120,
        "every test that was there all along is listed once"
    );
}

/// Five broken tests, in pages of two. After the first page is read, its first test recovers
/// (two passes on `main`) and leaves the list: following `next_page_token` still reaches
/// every test that stayed, the last page has none, and back from the second page is the
/// first page, whole.
async fn pages_stay_whole_when_a_test_leaves_the_list_between_requests(env: TestEnv) {
    for commit in ["L1", "L2", "L3"] {
        let report = generated_report("Gone", 5, "fail");
        upload(&env, &Run::main(commit, commit), &[], &[("r.xml", report)]).await;
    }
    let first = unhealthy(&env, "BROKEN", 2, "").await;
    assert_eq!(first["page"]["total_rows"], 5);
    let ids = |page: &Value| -> Vec<String> {
        let tests = page["tests"].as_array().unwrap();
        tests
            .iter()
            .map(|t| t["id"].as_str().unwrap().to_owned())
            .collect()
    };
    let leaving = first["tests"][0]["name"].as_str().unwrap().to_owned();
    let passed = format!(
        "<testsuite name=\"gen\" tests=\"1\">\n  <testcase classname=\"com.example.Gone\" \
         name=\"{leaving}\" time=\"0.01\"></testcase>\n</testsuite>\n"
    );
    for commit in ["L4", "L5"] {
        let files = [("r.xml", passed.clone().into_bytes())];
        upload(&env, &Run::main(commit, commit), &[], &files).await;
    }
    let mut seen = ids(&first);
    let mut page = first.clone();
    let mut pages = 1;
    while !token_of(&page).is_empty() {
        page = unhealthy(&env, "BROKEN", 2, &token_of(&page)).await;
        seen.extend(ids(&page));
        pages += 1;
    }
    let unique: HashSet<&String> = seen.iter().collect();
    assert_eq!(
        (seen.len(), unique.len(), pages),
        (5, 5, 3),
        "the four that stayed, after the one that left, each once"
    );
    assert_eq!(page["tests"].as_array().unwrap().len(), 1, "{page}");
    let second = unhealthy(&env, "BROKEN", 2, &token_of(&first)).await;
    let back = second["page"]["prev_page_token"].as_str().unwrap();
    let back = unhealthy(&env, "BROKEN", 2, back).await;
    assert_eq!(
        ids(&back),
        [ids(&first)[1].clone(), ids(&second)[0].clone()]
    );
    assert_eq!(
        (
            &back["page"]["page_index"],
            &back["page"]["prev_page_token"]
        ),
        (&json!(0), &json!(""))
    );
}

async fn page_size_must_be_1_to_100(env: TestEnv) {
    for size in [0, 101] {
        let body = health_body(json!({"status": "FLAKY", "page_query": {"page_size": size}}));
        let r = env
            .post("flaky-tests/list-unhealthy-tests", Some(ACME), &body)
            .await;
        assert_eq!(r.status, 400, "{size}");
        assert!(
            r.message().starts_with("page_query.page_size"),
            "{}",
            r.message()
        );
        let body = health_body(json!({"page_query": {"page_size": size}}));
        let r = env
            .post("flaky-tests/list-quarantined-tests", Some(ACME), &body)
            .await;
        assert_eq!(r.status, 400);
    }
    let body = health_body(
        json!({"status": "FLAKY", "page_query": {"page_size": 5, "page_token": "not-a-token"}}),
    );
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(ACME), &body)
        .await;
    assert!(
        r.status == 400 && r.message().contains("page_token"),
        "{:?}",
        r.body
    );
    let body = health_body(json!({"status": "HEALTHY", "page_query": {"page_size": 5}}));
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(ACME), &body)
        .await;
    assert!(
        r.status == 400 && r.message().starts_with("status"),
        "{:?}",
        r.body
    );
}

async fn other_organisations_get_not_found(env: TestEnv) {
    upload_two_commits(&env).await;
    let body = health_body(json!({"status": "FLAKY", "page_query": {"page_size": 10}}));
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(UMBRELLA), &body)
        .await;
    assert_eq!((r.status, r.code()), (404, "ORGANIZATION_NOT_FOUND"));
    let mut other = body.clone();
    other["org_url_slug"] = json!("umbrella");
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(ACME), &other)
        .await;
    assert_eq!(r.status, 404);
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(UMBRELLA), &other)
        .await;
    assert_eq!(
        (r.status, r.code()),
        (404, "REPOSITORY_NOT_FOUND"),
        "acme's repository is not umbrella's"
    );
    other["repo"]["owner"] = json!("umbrella");
    let r = env
        .post("flaky-tests/list-unhealthy-tests", Some(UMBRELLA), &other)
        .await;
    assert_eq!(
        (r.status, r.body["page"]["total_rows"].as_u64()),
        (200, Some(0)),
        "umbrella sees only its own"
    );
    let q = health_body(json!({"page_query": {"page_size": 10}}));
    assert_eq!(
        env.post("flaky-tests/list-quarantined-tests", Some(UMBRELLA), &q)
            .await
            .status,
        404
    );
    let s = health_body(json!({"quarantining": true}));
    assert_eq!(
        env.post("flaky-tests/update-settings", Some(UMBRELLA), &s)
            .await
            .status,
        404
    );
    let c = health_body(json!({"failed_tests": []}));
    assert_eq!(
        env.post("flaky-tests/check-quarantined", Some(UMBRELLA), &c)
            .await
            .status,
        404
    );
    assert_eq!(
        env.post("flaky-tests/list-unhealthy-tests", None, &body)
            .await
            .status,
        401
    );
}

async fn uploads_are_idempotent_by_upload_id(env: TestEnv) {
    let file = "nextest-retries-flaky.xml";
    let run = Run::main("A", "same");
    let files = [(file, fixture(file))];
    // Two deliveries of one upload at once, then a third: one result per test case.
    let (a, b) = tokio::join!(
        upload(&env, &run, &[], &files),
        upload(&env, &run, &[], &files)
    );
    assert_eq!(
        (a.status, b.status),
        (200, 200),
        "{:?} {:?}",
        a.body,
        b.body
    );
    assert_eq!(
        (a.body["test_cases"].as_u64(), a.body["retries"].as_u64()),
        (Some(6), Some(5))
    );
    assert_eq!(a.body["passed_on_retry"], 1);
    let third = upload(&env, &run, &[], &files).await;
    assert_eq!(third.body["duplicate"], true);
    // Sent three times, counted once: a broken streak needs three distinct results.
    let broken = unhealthy(&env, "BROKEN", 10, "").await;
    assert_eq!(broken["page"]["total_rows"], 0);
    for id in ["other-1", "other-2"] {
        upload(&env, &Run::main("A", id), &[], &files).await;
    }
    let broken = unhealthy(&env, "BROKEN", 10, "").await;
    assert_eq!(names(&broken), ["tests::always_fails"]);
}

async fn infrastructure_failures_are_not_evidence(env: TestEnv) {
    for i in 0..3 {
        let id = format!("infra-{i}");
        let report = generated_report("Infra", 12, "fail");
        let r = upload(
            &env,
            &Run::main(&format!("I{i}"), &id),
            &[],
            &[("r.xml", report)],
        )
        .await;
        assert_eq!(r.body["infrastructure_failure"], true, "{:?}", r.body);
    }
    let broken = unhealthy(&env, "BROKEN", 10, "").await;
    assert_eq!(
        broken["page"]["total_rows"], 0,
        "12 of 12 failing three times is the runner"
    );
}

/// One upload holds two reports of the same 12 tests: all passed in one, all failed in the
/// other (the runner died). In either order the upload is an infrastructure failure (every
/// test failed at least once), and no test is made flaky by it: the last attempt failing, the
/// summary counts them failed; a whole-suite retry passing after the dead runner, passed.
async fn a_report_of_a_dead_runner_after_a_passing_one_is_not_evidence(env: TestEnv) {
    let (pass, fail) = (
        ("pass.xml", generated_report("Infra", 12, "pass")),
        ("fail.xml", generated_report("Infra", 12, "fail")),
    );
    let orders = [
        ("D1", [pass.clone(), fail.clone()], [0, 12]),
        ("D2", [fail, pass], [12, 0]),
    ];
    for (commit, reports, [passed, failed]) in orders {
        let r = upload(&env, &Run::main(commit, commit), &[], &reports).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let counts = ["passed", "failed", "infrastructure_failure"].map(|k| r.body[k].clone());
        let expected = [json!(passed), json!(failed), json!(true)];
        assert_eq!(counts, expected, "{commit}: {:?}", r.body);
    }
    let flaky = unhealthy(&env, "FLAKY", 10, "").await;
    assert_eq!(flaky["page"]["total_rows"], 0, "{flaky}");
}

/// jest-junit names the suite of a test file without a `describe` `undefined`: two such files
/// hold two tests of one identity, in two `<testsuite>` elements of one report. They are not a
/// retry of one test: one failing is a failure (not hidden by the other's pass), and no
/// evidence that the test is flaky.
async fn two_tests_named_alike_in_one_report_are_not_a_retry(env: TestEnv) {
    let passing = r#"<testsuite name="undefined" tests="1" failures="0"><testcase classname=" renders" name=" renders"/></testsuite>"#;
    let failing = r#"<testsuite name="undefined" tests="1" failures="1"><testcase classname=" renders" name=" renders"><failure>boom</failure></testcase></testsuite>"#;
    let report = |suites: [&str; 2]| {
        let [first, second] = suites;
        format!(
            "<testsuites name=\"jest tests\" tests=\"2\" failures=\"1\">{first}{second}</testsuites>"
        )
    };
    // The failure after the pass, then before it (where a retry's pass would hide it).
    let uploads = [
        ("J1", report([passing, failing])),
        ("J2", report([failing, passing])),
    ];
    for (commit, xml) in uploads {
        let files = [("jest.xml", xml.into_bytes())];
        let r = upload(&env, &Run::main(commit, commit), &[], &files).await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        let counts = ["test_cases", "failed", "passed_on_retry"].map(|k| r.body[k].clone());
        assert_eq!(counts, [json!(1), json!(1), json!(0)], "{:?}", r.body);
    }
    let flaky = unhealthy(&env, "FLAKY", 10, "").await;
    assert_eq!(flaky["page"]["total_rows"], 0, "{flaky}");
}

async fn bad_uploads_are_refused_and_change_nothing(env: TestEnv) {
    let laughs = b"<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaa\"><!ENTITY b \"&a;&a;&a;\">]><testsuite name=\"&b;\"/>".to_vec();
    let good = fixture("nextest-retries-flaky.xml");
    let r = upload(
        &env,
        &Run::main("A", "bad-1"),
        &[],
        &[("ok.xml", good.clone()), ("evil.xml", laughs)],
    )
    .await;
    assert_eq!(r.status, 400);
    assert!(
        r.message().contains("file 2 (evil.xml)") && r.message().contains("DOCTYPE"),
        "{}",
        r.message()
    );
    let deep = format!("{}{}", "<testsuite>".repeat(50), "</testsuite>".repeat(50)).into_bytes();
    let r = upload(&env, &Run::main("A", "bad-2"), &[], &[("deep.xml", deep)]).await;
    assert!(
        r.status == 400 && r.message().contains("deeper than 32"),
        "{}",
        r.message()
    );
    let r = upload(&env, &Run::main("A", "bad-3"), &[], &[]).await;
    assert!(
        r.status == 400 && r.message().starts_with("file is required"),
        "{}",
        r.message()
    );
    let (ct, body) = form(
        &[
            ("repo", "github.com/acme/rocket"),
            ("branch", "main"),
            ("upload_id", "x"),
        ],
        &[("ok.xml", good.clone())],
    );
    let r = env.post_raw("flaky-tests/upload", ACME, &ct, body).await;
    assert!(
        r.status == 400 && r.message() == "commit_sha is required",
        "{}",
        r.message()
    );
    let r = upload(
        &env,
        &Run {
            commit: "A",
            branch: "bad branch",
            upload_id: "bad-4",
            pr: None,
        },
        &[],
        &[("ok.xml", good.clone())],
    )
    .await;
    assert!(
        r.status == 400 && r.message().starts_with("branch"),
        "{}",
        r.message()
    );
    let r = env
        .post_raw("flaky-tests/upload", ACME, "application/xml", good.clone())
        .await;
    assert_eq!((r.status, r.code()), (415, "UNSUPPORTED_MEDIA_TYPE"));
    let (ct, mut big) = form(&[("upload_id", "big")], &[("big.xml", good)]);
    big.resize(20 * 1024 * 1024 + 1, b' ');
    let r = env.post_raw("flaky-tests/upload", ACME, &ct, big).await;
    assert_eq!(r.status, 413);
    for status in ["FLAKY", "BROKEN"] {
        assert_eq!(
            unhealthy(&env, status, 10, "").await["page"]["total_rows"],
            0,
            "nothing stored"
        );
    }
    let again = upload(
        &env,
        &Run::main("A", "bad-1"),
        &[],
        &[("ok.xml", fixture("nextest-retries-flaky.xml"))],
    )
    .await;
    assert_eq!(
        again.body["duplicate"], false,
        "a refused upload id can be sent again"
    );
}

async fn settings_are_validated_and_name_the_field(env: TestEnv) {
    let r = env
        .post(
            "flaky-tests/update-settings",
            Some(ACME),
            &health_body(json!({"thresholds": {"flaky_windw": 5}})),
        )
        .await;
    assert_eq!(
        (r.status, r.message()),
        (
            400,
            "unknown field `flaky_windw` in thresholds: did you mean `flaky_window`?"
        )
    );
    let r = env
        .post(
            "flaky-tests/update-settings",
            Some(ACME),
            &health_body(json!({"quarantinning": true})),
        )
        .await;
    assert_eq!(
        (r.status, r.message()),
        (
            400,
            "unknown field `quarantinning`: did you mean `quarantining`?"
        )
    );
    let r = env
        .post(
            "flaky-tests/update-settings",
            Some(ACME),
            &health_body(json!({"thresholds": {"broken_window": 0}})),
        )
        .await;
    assert!(
        r.status == 400 && r.message().starts_with("thresholds.broken_window"),
        "{}",
        r.message()
    );
    let r = env
        .post(
            "flaky-tests/update-settings",
            Some(ACME),
            &health_body(json!({"quarantining": "yes"})),
        )
        .await;
    assert!(
        r.status == 400 && r.message().starts_with("quarantining"),
        "{}",
        r.message()
    );
    let unknown = json!({"quarantining": true, "test_overrides": [{"test_case_id": uuid::Uuid::nil().to_string(), "quarantine": "AUTO"}]});
    let r = env
        .post(
            "flaky-tests/update-settings",
            Some(ACME),
            &health_body(unknown),
        )
        .await;
    assert_eq!((r.status, r.code()), (404, "TEST_CASE_NOT_FOUND"));
    let r = env
        .post(
            "flaky-tests/update-settings",
            Some(ACME),
            &health_body(json!({})),
        )
        .await;
    assert_eq!(
        r.body["quarantining"], false,
        "the refused request changed nothing"
    );
    let t = set_settings(
        &env,
        json!({"thresholds": {"broken_consecutive_failures": 2, "stable_branches": ["trunk"]}}),
    )
    .await;
    assert_eq!(t["thresholds"]["broken_consecutive_failures"], 2);
    assert_eq!(
        t["thresholds"]["broken_window"], 20,
        "other thresholds keep their values"
    );
    // With the new thresholds, two failures on trunk are a breakage and main is not stable.
    let file = "surefire-2.22-noretry.xml";
    for (i, branch) in ["trunk", "trunk"].iter().enumerate() {
        let id = format!("t{i}");
        let run = Run {
            commit: &format!("T{i}"),
            branch,
            upload_id: &id,
            pr: None,
        };
        upload(&env, &run, &[], &[(file, fixture(file))]).await;
    }
    let broken = unhealthy(&env, "BROKEN", 10, "").await;
    assert_eq!(
        names(&broken),
        ["alwaysFails", "sometimesFails", "throwsError"]
    );
}

async fn tickets_link_to_test_cases(env: TestEnv) {
    upload_two_commits(&env).await;
    let id = id_of(&env, "FLAKY", "integration_flaky").await;
    let link = |url: &str| health_body(json!({"test_case_id": id, "ticket_url": url}));
    let t = env
        .ok(
            "flaky-tests/link-ticket",
            &link("https://tracker.example/T-42"),
        )
        .await;
    assert_eq!(t["ticket"]["html_url"], "https://tracker.example/T-42");
    let page = unhealthy(&env, "FLAKY", 10, "").await;
    let listed = page["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id.as_str())
        .unwrap();
    assert_eq!(listed["ticket"]["html_url"], "https://tracker.example/T-42");
    let r = env
        .post(
            "flaky-tests/link-ticket",
            Some(ACME),
            &link("javascript:alert(1)"),
        )
        .await;
    assert!(
        r.status == 400 && r.message().starts_with("ticket_url"),
        "{}",
        r.message()
    );
    let unlinked = env.ok("flaky-tests/link-ticket", &link("")).await;
    assert!(unlinked.get("ticket").is_none());
    let missing = health_body(
        json!({"test_case_id": uuid::Uuid::nil().to_string(), "ticket_url": "https://t/1"}),
    );
    assert_eq!(
        env.post("flaky-tests/link-ticket", Some(ACME), &missing)
            .await
            .status,
        404
    );
}

/// An environment whose application has a bucket on the run's moto server.
async fn with_bucket(backend: Backend) -> TestEnv {
    static NEXT: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let name = format!("mq-uploads-{}-{n}", std::process::id());
    let bucket = UploadBucket::local(
        &mq_tables::local_config(&mq_tables::moto::endpoint()).await,
        &name,
    );
    bucket.create().await.expect("bucket created on moto");
    TestEnv::start_with(backend, |app| app.with_uploads(std::sync::Arc::new(bucket))).await
}

async fn large_reports_go_through_s3(env: TestEnv) {
    let backend = env.backend();
    drop(env);
    let env = with_bucket(backend).await;
    let body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "commit_sha": sha("S"), "branch": "main", "upload_id": "s3-1",
    });
    let url = env.ok("flaky-tests/upload-url", &body).await;
    assert_eq!(url["method"], "PUT");
    let key = put_report(&env, &url).await;
    // The event S3 sends for the PUT (its documented shape).
    let event = json!({"Records": [{
        "eventVersion": "2.1", "eventSource": "aws:s3", "awsRegion": "us-east-1",
        "eventTime": "2026-11-22T00:00:00.000Z", "eventName": "ObjectCreated:Put",
        "userIdentity": {"principalId": "AWS:AIDAEXAMPLE"},
        "requestParameters": {"sourceIPAddress": "127.0.0.1"},
        "responseElements": {"x-amz-request-id": "R1", "x-amz-id-2": "I2"},
        "s3": {"s3SchemaVersion": "1.0", "configurationId": "uploads",
               "bucket": {"name": "b", "ownerIdentity": {"principalId": "A1"}, "arn": "arn:aws:s3:::b"},
               "object": {"key": key, "size": 3417,
                          "eTag": "0123456789abcdef", "sequencer": "0A1B2C3D4E5F678901"}}
    }]});
    let event = serde_json::from_value(event).unwrap();
    let app = env.app();
    let outcomes = ingest_test_results_object::handle(&app, event)
        .await
        .unwrap();
    assert_eq!(format!("{outcomes:?}"), "[Ingested { test_cases: 5 }]");
    let flaky = unhealthy(&env, "FLAKY", 10, "").await;
    assert_eq!(names(&flaky), ["sometimesFails"]);
    let again = env.post("flaky-tests/upload-url", Some(ACME), &body).await;
    assert_eq!(
        (again.status, again.code()),
        (409, "UPLOAD_ALREADY_RECEIVED")
    );
    assert!(again.message().ends_with("ingested"), "{}", again.message());
    an_object_too_large_is_refused_once(&env).await;
    an_ingestion_stopped_half_way_is_sent_again(&env).await;
    let none = TestEnv::start(backend).await;
    let r = none.post("flaky-tests/upload-url", Some(ACME), &body).await;
    assert_eq!((r.status, r.code()), (404, "UPLOADS_NOT_CONFIGURED"));
}

/// The uploads bucket of `env`, read by an ingestion that takes objects of 100 bytes at
/// most (the real limit is 100 MiB): as the object of the PUT is larger, its upload is
/// refused for good and says why, instead of failing the invocation again and again.
async fn an_object_too_large_is_refused_once(env: &TestEnv) {
    struct ReadingLittle(Arc<dyn mq_service::uploads::ReportBucket>);
    #[async_trait::async_trait]
    impl mq_service::uploads::ReportBucket for ReadingLittle {
        async fn presigned_put(&self, key: &str) -> Result<String, String> {
            self.0.presigned_put(key).await
        }
        async fn get(
            &self,
            key: &str,
            _max_bytes: usize,
        ) -> Result<mq_service::uploads::Fetched, String> {
            self.0.get(key, 100).await
        }
    }
    let body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "commit_sha": sha("T"), "branch": "main", "upload_id": "s3-too-large",
    });
    let url = env.ok("flaky-tests/upload-url", &body).await;
    let key = &put_report(env, &url).await;
    let app = env.app();
    let bucket = app.uploads.clone().expect("a bucket");
    let little = (*app).clone().with_uploads(Arc::new(ReadingLittle(bucket)));
    let refused = mq_service::test_health::objects::ingest_object(&little, key).await;
    let refused = format!("{:?}", refused.unwrap());
    assert!(refused.starts_with("Refused(\"the report is "), "{refused}");
    let again = mq_service::test_health::objects::ingest_object(&little, key).await;
    assert!(
        format!("{:?}", again.unwrap()).starts_with("Ignored("),
        "not tried again"
    );
    let asked = env.post("flaky-tests/upload-url", Some(ACME), &body).await;
    assert_eq!(asked.status, 409);
    assert!(
        asked.message().contains("refused: the report is "),
        "{}",
        asked.message()
    );
}

/// An ingestion that stopped half way (its function ran out of time, then of retries) leaves
/// its upload `ingesting`, as the claim that began it wrote it. Asking for the upload's URL
/// again gives a fresh one, and the report PUT there is ingested.
async fn an_ingestion_stopped_half_way_is_sent_again(env: &TestEnv) {
    let body = json!({
        "repo": {"host": "github.com", "owner": "acme", "name": "rocket"},
        "commit_sha": sha("U"), "branch": "main", "upload_id": "s3-stopped",
    });
    let first = env.ok("flaky-tests/upload-url", &body).await;
    let key = put_report(env, &first).await;
    let (org, upload) = mq_service::uploads::parse_object_key(&key).unwrap();
    let mut record = env.store.get_upload(&org, upload).await.unwrap().unwrap();
    record.state = mq_store::UploadState::Ingesting;
    env.store.put_upload(&record).await.unwrap();
    let again = env.ok("flaky-tests/upload-url", &body).await;
    let key = put_report(env, &again).await;
    let ingested = mq_service::test_health::objects::ingest_object(&env.app(), &key).await;
    assert_eq!(
        format!("{:?}", ingested.unwrap()),
        "Ingested { test_cases: 5 }"
    );
    let done = env.post("flaky-tests/upload-url", Some(ACME), &body).await;
    assert_eq!((done.status, done.code()), (409, "UPLOAD_ALREADY_RECEIVED"));
}

/// An upload whose merge runs out of its time answers 503, the upload left to finish; the
/// same upload sent again merges its results, and once more is a duplicate.
async fn an_upload_out_of_time_is_finished_when_sent_again(env: TestEnv) {
    use mq_core::health::UploadMetadata;
    use mq_core::ids::{OrgId, RepoRef};
    use mq_service::ServiceError;
    use mq_service::test_health::ingest::{Limits, MERGE_FOR_A_REQUEST};
    use mq_service::test_health::{IncomingUpload, ReportFile, ingest};

    let upload = || IncomingUpload {
        metadata: UploadMetadata {
            repo: RepoRef::new("github.com", "acme", "rocket").unwrap(),
            commit_sha: sha("T"),
            branch: "main".into(),
            pr_number: None,
            variant: String::new(),
            job_url: None,
            upload_id: "out-of-time".into(),
        },
        codeowners: None,
        files: vec![ReportFile {
            name: "big.xml".into(),
            bytes: e2e::health::generated_mix(150),
        }],
    };
    let (app, org) = (env.app(), OrgId::parse("acme").unwrap());
    let limits = Limits::default();
    let late = ingest(&app, &org, upload(), &limits, std::time::Duration::ZERO).await;
    assert!(
        matches!(late, Err(ServiceError::Unavailable { .. })),
        "{late:?}"
    );
    assert_eq!(
        unhealthy(&env, "FLAKY", 10, "").await["page"]["total_rows"],
        0
    );
    let done = ingest(&app, &org, upload(), &limits, MERGE_FOR_A_REQUEST).await;
    let done = done.expect("the rest merged");
    assert_eq!((done.duplicate, done.summary.test_cases), (false, 150));
    // One test in 50 passed on a rerun.
    assert_eq!(
        unhealthy(&env, "FLAKY", 10, "").await["page"]["total_rows"],
        3
    );
    let again = ingest(&app, &org, upload(), &limits, MERGE_FOR_A_REQUEST).await;
    assert!(again.unwrap().duplicate);
}

/// PUTs a Surefire report to the URL of an `upload-url` answer; the object's key.
async fn put_report(env: &TestEnv, url: &Value) -> String {
    let upload_url = url["upload_url"].as_str().unwrap();
    let put = env
        .http
        .put(upload_url)
        .body(fixture("surefire-2.22-rerun-flaky.xml"))
        .send()
        .await
        .unwrap();
    assert!(put.status().is_success(), "{}", put.status());
    let path = upload_url.split('?').next().unwrap();
    path[path.find("/test-results/").unwrap() + 1..].to_owned()
}

async fn flaky_tests_recover_after_seven_days(env: TestEnv) {
    upload_two_commits(&env).await;
    let app = App::new(env.store.clone(), Arc::new(SystemClock));
    let now = app.now();
    let in_time = || std::time::Instant::now() + std::time::Duration::from_secs(60);
    assert_eq!(
        recover(&app, now, in_time()).await.unwrap(),
        0,
        "nothing is due yet"
    );
    let later = Timestamp(now.millis() + 7 * 86_400_000 + 60_000);
    let time_up = std::time::Instant::now();
    assert_eq!(
        recover(&app, later, time_up).await.unwrap(),
        0,
        "no time left: the next tick's"
    );
    assert_eq!(recover(&app, later, in_time()).await.unwrap(), 2);
    let flaky = unhealthy(&env, "FLAKY", 10, "").await;
    assert_eq!(flaky["page"]["total_rows"], 0);
    assert_eq!(
        unhealthy(&env, "BROKEN", 10, "").await["page"]["total_rows"],
        1,
        "broken stays"
    );
    assert_eq!(
        recover(&app, later, in_time()).await.unwrap(),
        0,
        "done once"
    );
}

/// CI renamed its variant (`linux` to `linux-x86`) a month ago: a failure checked without a
/// variant is matched in the variant CI runs the test under now, not left ambiguous between
/// the two.
async fn a_variant_ci_no_longer_runs_is_not_matched(env: TestEnv) {
    let file = "nextest-noretry-run1.xml";
    for (variant, commit) in [("linux", "A"), ("linux-x86", "B")] {
        let run = Run::main(commit, variant);
        let r = upload(
            &env,
            &run,
            &[("variant", variant)],
            &[(file, fixture(file))],
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
        env.clock.advance_millis(30 * 86_400_000);
    }
    let failed = json!([{"name": "tests::always_fails", "classname": "flaky_demo",
                         "parent": "flaky_demo"}]);
    let answer = check(&env, failed).await;
    let t = &answer["tests"][0];
    assert_eq!(
        (&t["known"], &t["variant"]),
        (&json!(true), &json!("linux-x86")),
        "{answer}"
    );
}

/// CI checks a failure without a variant: it is matched in the one variant the uploads named
/// the test in, and the answer says which. Once two variants have it, neither is guessed, and
/// the answer says why; naming the variant matches it.
async fn a_failure_checked_without_a_variant_matches_its_one_known_variant(env: TestEnv) {
    let file = "nextest-noretry-run1.xml";
    let linux = Run::main("A", "a-linux");
    let r = upload(
        &env,
        &linux,
        &[("variant", "linux")],
        &[(file, fixture(file))],
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let failed = json!([{"name": "tests::always_fails", "classname": "flaky_demo",
                         "parent": "flaky_demo"}]);
    let answer = check(&env, failed.clone()).await;
    let t = &answer["tests"][0];
    assert_eq!(
        (&t["known"], &t["variant"]),
        (&json!(true), &json!("linux")),
        "{answer}"
    );
    assert!(t.get("note").is_none(), "{answer}");
    let id = t["test_case_id"].as_str().unwrap().to_owned();
    set_settings(
        &env,
        json!({"quarantining": true, "test_overrides": [
            {"test_case_id": id, "quarantine": "ALWAYS_QUARANTINE"}
        ]}),
    )
    .await;
    assert_eq!(check(&env, failed.clone()).await["all_quarantined"], true);

    let macos = Run::main("A", "a-macos");
    let r = upload(
        &env,
        &macos,
        &[("variant", "macos")],
        &[(file, fixture(file))],
    )
    .await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let answer = check(&env, failed.clone()).await;
    let t = &answer["tests"][0];
    assert_eq!(
        (&t["known"], &answer["all_quarantined"]),
        (&json!(false), &json!(false))
    );
    let note = t["note"].as_str().unwrap_or_default();
    assert!(
        note.contains("`linux`") && note.contains("`macos`"),
        "{answer}"
    );
    let body = health_body(json!({"variant": "macos", "failed_tests": failed}));
    let named = env.ok("flaky-tests/check-quarantined", &body).await;
    let t = &named["tests"][0];
    assert_eq!(
        (&t["known"], &t["variant"]),
        (&json!(true), &json!("macos")),
        "{named}"
    );

    let never = check(&env, json!([{"name": "never_seen"}])).await;
    assert_eq!(never["tests"][0]["note"], "no upload has named this test");
}

/// A client retrying an upload with the same `Idempotency-Key` draws a new multipart
/// boundary (curl does): the same parts are the same request, and the first answer is
/// replayed.
async fn an_upload_retried_with_its_idempotency_key_is_replayed(env: TestEnv) {
    let fields = [
        ("repo", "github.com/acme/rocket"),
        ("commit_sha", "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1"),
        ("branch", "main"),
        ("upload_id", "retried"),
    ];
    let report = "nextest-noretry-run1.xml";
    let (content_type, body) = e2e::health::form(&fields, &[(report, fixture(report))]);
    let mut answers = Vec::new();
    for boundary in ["first-attempt-boundary", "second-attempt-boundary"] {
        let retyped = content_type.replace("----mq-test-boundary-7d1b3", boundary);
        let rebound = String::from_utf8(body.clone())
            .unwrap()
            .replace("----mq-test-boundary-7d1b3", boundary);
        let answer = env
            .http
            .post(env.url("flaky-tests/upload"))
            .header("x-api-token", e2e::ACME)
            .header("idempotency-key", "upload-42")
            .header("content-type", retyped)
            .body(rebound)
            .send()
            .await
            .unwrap();
        let replayed = answer.headers().get("idempotency-replayed").is_some();
        answers.push((
            answer.status().as_u16(),
            replayed,
            answer.text().await.unwrap(),
        ));
    }
    assert_eq!(
        (answers[0].0, answers[0].1),
        (200, false),
        "{}",
        answers[0].2
    );
    assert_eq!(
        (answers[1].0, answers[1].1),
        (200, true),
        "{}",
        answers[1].2
    );
    assert_eq!(answers[0].2, answers[1].2);
}
