//! Every input has a limit: the body's size, the length of lists and strings, and (for JUnit)
//! DTDs and nesting depth. Each over-limit request is refused with 400 (413 for the body) and a
//! message naming the field, and changes nothing.

use e2e::health::{Run, form, health_body, upload};
use e2e::{ACME, TestEnv, on_both_stores, queue_body};
use serde_json::{Value, json};

on_both_stores!(every_limit_is_enforced_and_names_its_field);

fn long(n: usize) -> String {
    "x".repeat(n)
}

fn with_pr(mut body: Value, sha: &str) -> Value {
    body["pr"] = json!({"number": 1, "sha": sha});
    body
}

/// (endpoint, body, the field the error must name), each just over its limit.
fn over_limit() -> Vec<(&'static str, Value, &'static str)> {
    let sha = "a".repeat(40);
    let q = |extra: Value| queue_body("rocket", extra);
    let many_tests: Vec<Value> = (0..10_001)
        .map(|i| json!({"name": format!("t{i}")}))
        .collect();
    let many_overrides: Vec<Value> = (0..10_001)
        .map(|_| json!({"test_case_id": uuid::Uuid::nil().to_string(), "quarantine": "ALWAYS"}))
        .collect();
    let mut long_repo = q(json!({}));
    long_repo["repo"]["name"] = json!(long(256));
    let mut long_host = q(json!({}));
    long_host["repo"]["host"] = json!(format!("{}.com", long(252)));
    vec![
        ("getQueue", long_repo, "repo.name"),
        ("getQueue", long_host, "repo.host"),
        (
            "getQueue",
            json!({"repo": q(json!({}))["repo"], "targetBranch": long(256)}),
            "targetBranch",
        ),
        (
            "updateQueue",
            q(json!({"requiredStatuses": (0..101).map(|i| format!("s{i}")).collect::<Vec<_>>()})),
            "requiredStatuses",
        ),
        (
            "updateQueue",
            q(json!({"requiredStatuses": [long(256)]})),
            "requiredStatuses[0]",
        ),
        (
            "setImpactedTargets",
            with_pr(q(json!({"impactedTargets": vec!["//t"; 4_097]})), &sha),
            "impactedTargets",
        ),
        (
            "setImpactedTargets",
            with_pr(q(json!({"impactedTargets": [long(1025)]})), &sha),
            "impactedTargets[0]",
        ),
        (
            "setImpactedTargets",
            with_pr(
                q(
                    json!({"impactedTargets": (0..65).map(|i| format!("{i:04}{}", long(1020))).collect::<Vec<_>>()}),
                ),
                &sha,
            ),
            "impactedTargets",
        ),
        (
            "getMergeQueueTestingDetails",
            q(json!({"testRunId": long(201)})),
            "testRunId",
        ),
        (
            "flaky-tests/check-quarantined",
            health_body(json!({"failed_tests": many_tests})),
            "failed_tests",
        ),
        (
            "flaky-tests/check-quarantined",
            health_body(json!({"failed_tests": [{"name": long(4097)}]})),
            "failed_tests[0].name",
        ),
        (
            "flaky-tests/check-quarantined",
            health_body(json!({"failed_tests": [], "variant": long(256)})),
            "variant",
        ),
        (
            "flaky-tests/update-settings",
            health_body(json!({"test_overrides": many_overrides})),
            "test_overrides",
        ),
        (
            "flaky-tests/link-ticket",
            health_body(json!({"test_case_id": uuid::Uuid::nil().to_string(),
                               "ticket_url": format!("https://t.example/{}", long(2048))})),
            "ticket_url",
        ),
        (
            "flaky-tests/list-unhealthy-tests",
            health_body(json!({"status": "FLAKY", "page_query": {"page_size": 101}})),
            "page_query.page_size",
        ),
    ]
}

async fn every_limit_is_enforced_and_names_its_field(env: TestEnv) {
    let rocket = queue_body("rocket", json!({}));
    env.ok("createQueue", &rocket).await;
    let before = env.ok("getQueue", &rocket).await;

    let mut wrong = Vec::new();
    for (path, body, field) in over_limit() {
        let r = env.post(path, Some(ACME), &body).await;
        if r.status != 400 || !r.message().starts_with(field) {
            wrong.push(format!(
                "{path} {field}: {} {} {}",
                r.status,
                r.code(),
                r.message()
            ));
        }
    }

    // Uploads: form fields and JUnit files.
    let form_limits = [
        (vec![("upload_id", long(129))], "upload_id"),
        (vec![("variant", long(256))], "variant"),
        (
            vec![("job_url", format!("https://ci.example/{}", long(2048)))],
            "job_url",
        ),
    ];
    for (fields, field) in form_limits {
        let extra: Vec<(&str, &str)> = fields.iter().map(|(k, v)| (*k, v.as_str())).collect();
        let report = ("r.xml", b"<testsuite name=\"s\" tests=\"0\"/>".to_vec());
        let r = upload(&env, &Run::main("c", "u-limits"), &extra, &[report]).await;
        if r.status != 400 || !r.message().contains(field) {
            wrong.push(format!("upload {field}: {} {}", r.status, r.message()));
        }
    }
    let report =
        |name: &str| format!(r#"<testsuite name="s"><testcase name="{name}"/></testsuite>"#);
    let many: Vec<(String, Vec<u8>)> = (0..1001)
        .map(|i| (format!("r{i}.xml"), report("t").into_bytes()))
        .collect();
    let many: Vec<(&str, Vec<u8>)> = many.iter().map(|(n, b)| (n.as_str(), b.clone())).collect();
    let r = upload(&env, &Run::main("c", "u-many"), &[], &many).await;
    if r.status != 400 || !r.message().starts_with("file: at most 1000 reports") {
        wrong.push(format!("upload 1001 files: {} {}", r.status, r.message()));
    }
    let long_name = [("long.xml", report(&long(4097)).into_bytes())];
    let r = upload(&env, &Run::main("c", "u-long"), &[], &long_name).await;
    if r.status != 400 || !r.message().contains("has a name longer than 4096 bytes") {
        wrong.push(format!(
            "upload long test name: {} {}",
            r.status,
            r.message()
        ));
    }
    // CODEOWNERS that cannot be stored in one item even compressed: random characters.
    let mut seed = 11u64;
    let noise: String = (0..600 * 1024)
        .map(|_| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            char::from(b'!' + (seed >> 58) as u8)
        })
        .collect();
    let tiny = [("r.xml", report("t").into_bytes())];
    let r = upload(
        &env,
        &Run::main("c", "u-owners"),
        &[("codeowners", &noise)],
        &tiny,
    )
    .await;
    if r.status != 400 || !r.message().starts_with("codeowners must compress") {
        wrong.push(format!("upload codeowners: {} {}", r.status, r.message()));
    }

    let laughs = b"<?xml version=\"1.0\"?><!DOCTYPE l [<!ENTITY a \"aaaaaaaaaa\">\
        <!ENTITY b \"&a;&a;&a;&a;&a;&a;&a;&a;&a;&a;\"><!ENTITY c \"&b;&b;&b;&b;&b;&b;&b;&b;&b;&b;\">]>\
        <testsuite name=\"&c;\"/>"
        .to_vec();
    let deep = format!(
        "{}{}",
        "<testsuite>".repeat(10_000),
        "</testsuite>".repeat(10_000)
    );
    for (name, file, says) in [
        ("laughs.xml", laughs, "DOCTYPE"),
        ("deep.xml", deep.into_bytes(), "deeper than 32"),
    ] {
        let r = upload(&env, &Run::main("c", "u-xml"), &[], &[(name, file)]).await;
        if r.status != 400 || !r.message().contains(says) {
            wrong.push(format!("upload {name}: {} {}", r.status, r.message()));
        }
    }

    // The body: 20 MiB, for JSON and for multipart uploads.
    let big = vec![b' '; 20 * 1024 * 1024 + 1];
    let r = env
        .post_raw("updateQueue", ACME, "application/json", big.clone())
        .await;
    if (r.status, r.code()) != (413, "PAYLOAD_TOO_LARGE") {
        wrong.push(format!("updateQueue body: {} {}", r.status, r.code()));
    }
    let (ct, mut form_body) = form(&[("repo", "github.com/acme/rocket")], &[]);
    form_body.extend_from_slice(&big);
    let r = env
        .post_raw("flaky-tests/upload", ACME, &ct, form_body)
        .await;
    if (r.status, r.code()) != (413, "PAYLOAD_TOO_LARGE") {
        wrong.push(format!("upload body: {} {}", r.status, r.code()));
    }

    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
    assert_eq!(env.ok("getQueue", &rocket).await, before, "nothing changed");
    let listed = env
        .ok(
            "flaky-tests/list-unhealthy-tests",
            &health_body(json!({"status": "FLAKY", "page_query": {"page_size": 10}})),
        )
        .await;
    assert_eq!(listed["page"]["total_rows"], 0, "no upload was recorded");
}
