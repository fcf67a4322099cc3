//! Queue administration over HTTP: createQueue, getQueue, updateQueue, deleteQueue.

use e2e::{ACME, REVOKED, TestEnv, UMBRELLA, on_both_stores, queue_body};
use serde_json::{Value, json};

on_both_stores!(
    create_returns_every_setting_with_defaults,
    get_returns_the_queue_and_its_entries,
    update_changes_only_what_it_names,
    required_statuses_rules,
    mode_change_is_immediate_when_nothing_tests,
    switching_modes_cannot_be_requested,
    delete_removes_an_empty_queue,
    delete_refuses_a_queue_with_entries,
    duplicate_create_conflicts,
    every_endpoint_requires_a_valid_token,
    other_organisations_get_not_found,
    wrong_types_and_missing_fields_name_the_field,
    integers_out_of_range_are_refused,
    unknown_enum_values_are_refused,
    enums_are_accepted_in_any_case_and_emitted_lowercase,
    bodies_over_twenty_mebibytes_get_413,
    non_json_bodies_get_415,
    concurrent_updates_lose_nothing,
    misspelt_settings_are_refused_and_change_nothing,
);

/// The fields every queue response carries (`Queue` in `openapi/openapi.json`).
const QUEUE_FIELDS: [&str; 22] = [
    "state",
    "branch",
    "concurrency",
    "testingTimeoutMinutes",
    "mode",
    "canOptimisticallyMerge",
    "pendingFailureDepth",
    "adaptivePendingFailure",
    "batch",
    "batchingMaxWaitTimeMinutes",
    "batchingMinSize",
    "createPrsForTestingBranches",
    "commentsEnabled",
    "commandsEnabled",
    "statusCheckEnabled",
    "bisectionConcurrency",
    "requiredStatuses",
    "directMergeMode",
    "optimizationMode",
    "mergeMethod",
    "autoTune",
    "tuning",
];

fn assert_queue_shape(body: &Value) {
    for field in QUEUE_FIELDS {
        assert!(body.get(field).is_some(), "missing {field} in {body}");
    }
}

async fn create_returns_every_setting_with_defaults(env: TestEnv) {
    let body = env
        .ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    assert_queue_shape(&body);
    assert_eq!(
        body,
        json!({
            "state": "running", "branch": "main", "concurrency": 1, "testingTimeoutMinutes": 60,
            "mode": "single", "canOptimisticallyMerge": false, "pendingFailureDepth": 1,
            "adaptivePendingFailure": false, "batch": false, "batchingMaxWaitTimeMinutes": 5, "batchingMinSize": 4,
            "createPrsForTestingBranches": false, "commentsEnabled": true, "commandsEnabled": true,
            "statusCheckEnabled": true, "bisectionConcurrency": 1, "requiredStatuses": [],
            "directMergeMode": "off", "optimizationMode": "off", "mergeMethod": "squash",
            "autoTune": false, "tuning": {"changes": []}
        })
    );
    let tuned = env
        .ok(
            "createQueue",
            &queue_body(
                "probe",
                json!({"concurrency": 4, "batch": true, "state": "paused"}),
            ),
        )
        .await;
    assert_eq!(
        (
            tuned["concurrency"].as_u64(),
            tuned["bisectionConcurrency"].as_u64()
        ),
        (Some(4), Some(4))
    );
    assert_eq!(
        (tuned["batch"].as_bool(), tuned["state"].as_str()),
        (Some(true), Some("paused"))
    );
}

async fn get_returns_the_queue_and_its_entries(env: TestEnv) {
    env.ok(
        "createQueue",
        &queue_body("rocket", json!({"concurrency": 2})),
    )
    .await;
    let body = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_queue_shape(&body);
    assert_eq!(body["concurrency"], 2);
    assert_eq!(body["enqueuedPullRequests"], json!([]));
    let missing = env
        .post("getQueue", Some(ACME), &queue_body("nothing", json!({})))
        .await;
    assert_eq!((missing.status, missing.code()), (404, "QUEUE_NOT_FOUND"));
}

async fn update_changes_only_what_it_names(env: TestEnv) {
    env.ok(
        "createQueue",
        &queue_body("rocket", json!({"concurrency": 2})),
    )
    .await;
    let updated = env
        .ok(
            "updateQueue",
            &queue_body(
                "rocket",
                json!({"testingTimeoutMinutes": 30, "mergeMethod": "rebase", "state": "draining"}),
            ),
        )
        .await;
    assert_queue_shape(&updated);
    assert!(
        updated.get("enqueuedPullRequests").is_none(),
        "updateQueue has no entries"
    );
    assert_eq!(updated["testingTimeoutMinutes"], 30);
    assert_eq!(updated["mergeMethod"], "rebase");
    assert_eq!(updated["state"], "draining");
    assert_eq!(
        updated["concurrency"], 2,
        "untouched fields keep their value"
    );
    let read = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_eq!(read["testingTimeoutMinutes"], 30);
    assert_eq!(read["state"], "draining");
}

async fn required_statuses_rules(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let set = env
        .ok(
            "updateQueue",
            &queue_body("rocket", json!({"requiredStatuses": ["build", "test"]})),
        )
        .await;
    assert_eq!(set["requiredStatuses"], json!(["build", "test"]));
    let empty = env
        .ok(
            "updateQueue",
            &queue_body("rocket", json!({"requiredStatuses": []})),
        )
        .await;
    assert_eq!(
        empty["requiredStatuses"],
        json!(["build", "test"]),
        "an empty list is ignored"
    );
    let both = env
        .post(
            "updateQueue",
            Some(ACME),
            &queue_body(
                "rocket",
                json!({"requiredStatuses": ["x"], "deleteRequiredStatuses": true}),
            ),
        )
        .await;
    assert_eq!(both.status, 400);
    assert!(
        both.message().contains("deleteRequiredStatuses"),
        "{}",
        both.message()
    );
    // The queue's own status is never set on a test branch: every run would time out.
    let own = env
        .post(
            "updateQueue",
            Some(ACME),
            &queue_body(
                "rocket",
                json!({"requiredStatuses": ["build", "merge-queue"]}),
            ),
        )
        .await;
    assert_eq!(own.status, 400);
    assert!(
        own.message().contains("requiredStatuses[1]"),
        "{}",
        own.message()
    );
    let kept = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_eq!(kept["requiredStatuses"], json!(["build", "test"]));
    let cleared = env
        .ok(
            "updateQueue",
            &queue_body("rocket", json!({"deleteRequiredStatuses": true})),
        )
        .await;
    assert_eq!(cleared["requiredStatuses"], json!([]));
}

async fn mode_change_is_immediate_when_nothing_tests(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let body = env
        .ok(
            "updateQueue",
            &queue_body("rocket", json!({"mode": "parallel"})),
        )
        .await;
    assert_eq!(
        (body["mode"].as_str(), body["state"].as_str()),
        (Some("parallel"), Some("running"))
    );
}

async fn switching_modes_cannot_be_requested(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let r = env
        .post(
            "updateQueue",
            Some(ACME),
            &queue_body("rocket", json!({"state": "switching_modes"})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert!(
        r.message()
            .starts_with("state: unknown value \"switching_modes\""),
        "{}",
        r.message()
    );
}

async fn delete_removes_an_empty_queue(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    assert_eq!(
        env.ok("deleteQueue", &queue_body("rocket", json!({})))
            .await,
        json!({})
    );
    let gone = env
        .post("getQueue", Some(ACME), &queue_body("rocket", json!({})))
        .await;
    assert_eq!(gone.status, 404);
    let again = env
        .post("deleteQueue", Some(ACME), &queue_body("rocket", json!({})))
        .await;
    assert_eq!(again.status, 404);
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
}

async fn delete_refuses_a_queue_with_entries(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    e2e::fixtures::add_entry(env.store.as_ref(), "rocket", 7).await;
    let r = env
        .post("deleteQueue", Some(ACME), &queue_body("rocket", json!({})))
        .await;
    assert_eq!((r.status, r.code()), (409, "QUEUE_NOT_EMPTY"));
    let still = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_eq!(still["enqueuedPullRequests"][0]["prNumber"], 7);
}

async fn duplicate_create_conflicts(env: TestEnv) {
    env.ok(
        "createQueue",
        &queue_body("rocket", json!({"concurrency": 2})),
    )
    .await;
    let r = env
        .post(
            "createQueue",
            Some(ACME),
            &queue_body("rocket", json!({"concurrency": 5})),
        )
        .await;
    assert_eq!((r.status, r.code()), (409, "QUEUE_ALREADY_EXISTS"));
    let body = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_eq!(body["concurrency"], 2, "the refused create changed nothing");
}

async fn every_endpoint_requires_a_valid_token(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    for path in ["createQueue", "getQueue", "updateQueue", "deleteQueue"] {
        for token in [None, Some("wrong-token"), Some(REVOKED)] {
            let r = env
                .post(
                    path,
                    token,
                    &queue_body("rocket", json!({"concurrency": 9})),
                )
                .await;
            assert_eq!(
                (r.status, r.code()),
                (401, "UNAUTHORIZED"),
                "{path} with {token:?}"
            );
            assert!(r.headers.contains_key("x-request-id"));
        }
    }
    let body = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_eq!(body["concurrency"], 1, "nothing changed");
    let bearer = env
        .http
        .post(env.url("getQueue"))
        .header("authorization", format!("Bearer {ACME}"))
        .json(&queue_body("rocket", json!({})))
        .send()
        .await
        .unwrap();
    assert_eq!(
        bearer.status(),
        200,
        "Authorization: Bearer is accepted too"
    );
}

async fn other_organisations_get_not_found(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    for path in ["getQueue", "updateQueue", "deleteQueue"] {
        let r = env
            .post(
                path,
                Some(UMBRELLA),
                &queue_body("rocket", json!({"concurrency": 9})),
            )
            .await;
        assert_eq!(
            (r.status, r.code()),
            (404, "REPOSITORY_NOT_FOUND"),
            "{path}"
        );
        let unknown = env
            .post(path, Some(UMBRELLA), &queue_body("nothing", json!({})))
            .await;
        assert_eq!(
            unknown.body, r.body,
            "{path}: indistinguishable from a missing queue"
        );
    }
    let body = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    assert_eq!(body["concurrency"], 1);
}

async fn wrong_types_and_missing_fields_name_the_field(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let cases = [
        (json!({"targetBranch": "main"}), "repo"),
        (
            json!({"repo": {"host": "github.com", "owner": "acme"}, "targetBranch": "main"}),
            "name",
        ),
        (
            json!({"repo": {"host": "github.com", "owner": "acme", "name": "rocket"}}),
            "targetBranch",
        ),
        (
            queue_body("rocket", json!({"concurrency": "3"})),
            "concurrency",
        ),
        (queue_body("rocket", json!({"batch": "yes"})), "batch"),
        (
            queue_body("rocket", json!({"requiredStatuses": "ci"})),
            "requiredStatuses",
        ),
        (
            queue_body("rocket", json!({"testingTimeoutMinutes": 1.5})),
            "testingTimeoutMinutes",
        ),
        (
            json!({"repo": "acme/rocket", "targetBranch": "main"}),
            "repo",
        ),
        (
            queue_body("rocket", json!({"targetBranch": "bad..branch"})),
            "targetBranch",
        ),
        (
            json!({"repo": {"host": "github.com", "owner": "acme", "name": "a b"}, "targetBranch": "main"}),
            "repo.name",
        ),
    ];
    for path in ["updateQueue", "createQueue"] {
        for (body, field) in &cases {
            let r = env.post(path, Some(ACME), body).await;
            assert_eq!(r.status, 400, "{path} {body}: {:?}", r.body);
            assert!(
                r.message().contains(field),
                "{path} {body}: message {:?} names {field}",
                r.message()
            );
        }
    }
    let r = env.post("getQueue", Some(ACME), &json!([1, 2])).await;
    assert_eq!(r.status, 400);
}

async fn integers_out_of_range_are_refused(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let fields = [
        "concurrency",
        "bisectionConcurrency",
        "testingTimeoutMinutes",
        "pendingFailureDepth",
        "batchingMaxWaitTimeMinutes",
        "batchingMinSize",
    ];
    for field in fields {
        for value in [json!(0), json!(4_294_967_296u64), json!(-1), json!(1e20)] {
            let r = env
                .post(
                    "updateQueue",
                    Some(ACME),
                    &queue_body("rocket", json!({ field: value })),
                )
                .await;
            assert_eq!(r.status, 400, "{field}={value}");
            assert!(
                r.message().starts_with(field),
                "{field}={value}: {}",
                r.message()
            );
        }
        let max = env
            .ok(
                "updateQueue",
                &queue_body("rocket", json!({ field: 4_294_967_295u64 })),
            )
            .await;
        assert_eq!(max[field], 4_294_967_295u64);
    }
    let r = env
        .post(
            "createQueue",
            Some(ACME),
            &queue_body("probe", json!({"concurrency": 0})),
        )
        .await;
    assert_eq!(r.status, 400);
    assert_eq!(
        env.post("getQueue", Some(ACME), &queue_body("probe", json!({})))
            .await
            .status,
        404,
        "nothing created"
    );
}

async fn unknown_enum_values_are_refused(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    for (field, value) in [
        ("state", "stopped"),
        ("mode", "serial"),
        ("directMergeMode", "sometimes"),
        ("optimizationMode", "fast"),
        ("mergeMethod", "octopus"),
    ] {
        let r = env
            .post(
                "updateQueue",
                Some(ACME),
                &queue_body("rocket", json!({ field: value })),
            )
            .await;
        assert_eq!(r.status, 400, "{field}");
        assert!(
            r.message()
                .starts_with(&format!("{field}: unknown value \"{value}\"")),
            "{}",
            r.message()
        );
    }
}

async fn enums_are_accepted_in_any_case_and_emitted_lowercase(env: TestEnv) {
    let body = env
        .ok(
            "createQueue",
            &queue_body(
                "rocket",
                json!({"mode": "PARALLEL", "mergeMethod": "Merge_Commit", "directMergeMode": "ALWAYS",
                       "optimizationMode": "BISECTION_SKIP_REDUNDANT_TESTS", "state": "Paused"}),
            ),
        )
        .await;
    assert_eq!(body["mode"], "parallel");
    assert_eq!(body["mergeMethod"], "merge_commit");
    assert_eq!(body["directMergeMode"], "always");
    assert_eq!(body["optimizationMode"], "bisection_skip_redundant_tests");
    assert_eq!(body["state"], "paused");
}

async fn bodies_over_twenty_mebibytes_get_413(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let limit = 20 * 1024 * 1024;
    let mut body = serde_json::to_vec(&queue_body("rocket", json!({"concurrency": 7}))).unwrap();
    body.pop();
    body.extend_from_slice(b",\"padding\":\"");
    let tail = b"\"}";
    body.resize(limit + 1 - tail.len(), b'x');
    body.extend_from_slice(tail);
    assert_eq!(body.len(), limit + 1);
    let r = env
        .post_raw("updateQueue", ACME, "application/json", body)
        .await;
    assert_eq!((r.status, r.code()), (413, "PAYLOAD_TOO_LARGE"));
    assert_eq!(
        env.ok("getQueue", &queue_body("rocket", json!({}))).await["concurrency"],
        1
    );
}

async fn non_json_bodies_get_415(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let body = serde_json::to_vec(&queue_body("rocket", json!({"concurrency": 7}))).unwrap();
    let r = env.post_raw("updateQueue", ACME, "text/plain", body).await;
    assert_eq!((r.status, r.code()), (415, "UNSUPPORTED_MEDIA_TYPE"));
    assert_eq!(
        env.ok("getQueue", &queue_body("rocket", json!({}))).await["concurrency"],
        1
    );
}

/// Nine clients each set a different setting of one queue at the same time: all land.
async fn concurrent_updates_lose_nothing(env: TestEnv) {
    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let updates = [
        ("concurrency", json!(8)),
        ("bisectionConcurrency", json!(7)),
        ("testingTimeoutMinutes", json!(45)),
        ("pendingFailureDepth", json!(3)),
        ("batchingMaxWaitTimeMinutes", json!(9)),
        ("batchingMinSize", json!(6)),
        ("canOptimisticallyMerge", json!(true)),
        ("adaptivePendingFailure", json!(true)),
        ("batch", json!(true)),
    ];
    let env = std::sync::Arc::new(env);
    let mut tasks = Vec::new();
    for (field, value) in updates.clone() {
        let env = env.clone();
        tasks.push(tokio::spawn(async move {
            env.post(
                "updateQueue",
                Some(ACME),
                &queue_body("rocket", json!({ field: value })),
            )
            .await
            .status
        }));
    }
    for t in tasks {
        assert_eq!(t.await.unwrap(), 200);
    }
    let body = env.ok("getQueue", &queue_body("rocket", json!({}))).await;
    for (field, value) in updates {
        assert_eq!(body[field], value, "{field} kept");
    }
}

/// A setting the queue does not know is refused with the nearest known name, on createQueue
/// and updateQueue, and changes nothing; other endpoints keep ignoring unknown fields.
async fn misspelt_settings_are_refused_and_change_nothing(env: TestEnv) {
    let r = env
        .post(
            "createQueue",
            Some(ACME),
            &queue_body("rocket", json!({"mergeMthod": "rebase"})),
        )
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_REQUEST"));
    assert_eq!(
        r.message(),
        "unknown field `mergeMthod`: did you mean `mergeMethod`?"
    );
    let missing = env
        .post("getQueue", Some(ACME), &queue_body("rocket", json!({})))
        .await;
    assert_eq!(missing.status, 404, "no queue was created");

    env.ok("createQueue", &queue_body("rocket", json!({})))
        .await;
    let r = env
        .post(
            "updateQueue",
            Some(ACME),
            &queue_body("rocket", json!({"concurency": 2})),
        )
        .await;
    assert_eq!((r.status, r.code()), (400, "INVALID_REQUEST"));
    assert_eq!(
        r.message(),
        "unknown field `concurency`: did you mean `concurrency`?"
    );
    let read = env
        .ok("getQueue", &queue_body("rocket", json!({"extra": true})))
        .await;
    assert_eq!(
        read["concurrency"], 1,
        "unchanged; getQueue ignores `extra`"
    );
}
