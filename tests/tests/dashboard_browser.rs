//! The dashboard in a real browser: headless Chromium (Debian's, installed on first use by
//! `infra/scripts/install-browser`) through ChromeDriver, against the gateway with a real git
//! repository and its local CI (each test branch tested with `sleep 4; test ! -e FAIL`; #3
//! adds a file named `FAIL`).
//!
//! A wrong token is refused; the right one signs in and is kept in session storage only (not
//! in the address, not in a cookie). The queue is paused and resumed from its page, through the
//! confirmation dialog (also with the keyboard alone); #1 is seen waiting, testing and merged;
//! #3 is seen failing, with its reason, on the queue page and on its own page; asked for
//! advice, the young queue's page shows why there is none, and auto-tuning off; the test-health
//! page shows an upload's flaky tests with their strips and ticket. Another organisation sees
//! none of it. No page breaks the Content-Security-Policy. A screenshot of each page is kept in
//! `target/dashboard-screenshots/`; with `MQ_README_SCREENSHOT=1` the queue page's also
//! replaces `docs/images/queue-page.png`.

use e2e::browser::Browser;
use e2e::health::{Run, fixture, generated_report, health_body, upload};
use e2e::live::{CI, LiveEnv, pr_body};
use e2e::{ACME, Backend, UMBRELLA};
use fantoccini::key::Key;
use serde_json::{Value, json};
use std::path::PathBuf;
use std::time::Instant;

fn screenshots() -> PathBuf {
    let root = mq_tables::moto::workspace_root();
    root.canonicalize()
        .unwrap_or(root)
        .join("target/dashboard-screenshots")
}

/// Records the page's Content-Security-Policy violations from now on (the page is one
/// document: its routes change the hash, never the page).
const WATCH_VIOLATIONS: &str = "window.violations = []; \
     document.addEventListener('securitypolicyviolation', \
       (e) => window.violations.push(`${e.violatedDirective} ${e.blockedURI}`));";

async fn sign_in(browser: &Browser, base: &str, token: &str) {
    browser.goto(&format!("{base}/#/signin")).await;
    let input = browser.find("#token").await;
    input.clear().await.expect("the token field clears");
    input.send_keys(token).await.expect("the token is typed");
    browser
        .find("#signin-submit")
        .await
        .click()
        .await
        .expect("sign in");
}

/// Opens the confirmation dialog of `action` (`pause`, `resume`, `drain`) and confirms it.
async fn operate(browser: &Browser, action: &str) {
    browser
        .find(&format!("#{action}"))
        .await
        .click()
        .await
        .unwrap();
    browser.wait_for_text("#confirm", "Cancel").await;
    assert_eq!(
        browser.focused().await,
        "confirm-cancel",
        "focus starts on Cancel"
    );
    browser.find("#confirm-ok").await.click().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_user_signs_in_and_follows_the_queue_in_a_browser() {
    let started = Instant::now();
    let env = LiveEnv::options()
        .ci("sleep 4; test ! -e FAIL")
        .start(Backend::Memory)
        .await;
    let repo = env.repo("rocket");
    repo.add_prs(3, &[3]);
    env.create_queue(&repo, json!({"requiredStatuses": [CI]}))
        .await;
    let base = format!("http://{}", env.gateway.addr);
    let shots = screenshots();
    let browser = Browser::start().await;

    // A wrong token is refused, with the API's message, and nothing is kept.
    sign_in(&browser, &base, "not-a-token").await;
    let refused = browser
        .wait_for_text("#signin-error", "Sign-in refused")
        .await;
    assert!(refused.to_lowercase().contains("token"), "{refused}");
    browser.screenshot(&shots, "sign-in-refused.png").await;
    let kept = browser
        .run("return sessionStorage.getItem('mq.apiToken');", vec![])
        .await;
    assert_eq!(kept, Value::Null);

    // The right one: the organisation's queues.
    sign_in(&browser, &base, ACME).await;
    let row = "#queue-list tr[data-queue=\"github.com/acme/rocket#main\"]";
    browser.wait_for_text(row, "running").await;
    browser.run(WATCH_VIOLATIONS, vec![]).await;
    let where_kept = browser
        .run(
            "return [sessionStorage.getItem('mq.apiToken'), localStorage.length, document.cookie, location.href];",
            vec![],
        )
        .await;
    assert_eq!(where_kept[0], ACME, "in session storage");
    assert_eq!(where_kept[1], 0, "not in local storage");
    assert_eq!(where_kept[2], "", "not in a cookie");
    assert!(
        !where_kept[3].as_str().unwrap().contains(ACME),
        "not in the address"
    );
    browser.wait_for_text("#who", "acme").await;
    browser.screenshot(&shots, "queues.png").await;

    // The queue's page; pausing it from the keyboard: Enter opens the dialog, Escape cancels
    // it and gives focus back; then pause it for real.
    browser
        .find(&format!("{row} a"))
        .await
        .click()
        .await
        .unwrap();
    browser.wait_for_text("#queue-state", "running").await;
    browser
        .run("document.getElementById('pause').focus();", vec![])
        .await;
    let pause = browser.client.active_element().await.unwrap();
    pause.send_keys(&Key::Enter.to_string()).await.unwrap();
    browser.wait_for_text("#confirm-title", "Pause").await;
    assert_eq!(browser.focused().await, "confirm-cancel");
    let cancel = browser.client.active_element().await.unwrap();
    cancel.send_keys(&Key::Escape.to_string()).await.unwrap();
    let closed = browser
        .run("return document.getElementById('confirm').open;", vec![])
        .await;
    assert_eq!(closed, false, "Escape closes the dialog");
    assert_eq!(
        browser.focused().await,
        "pause",
        "focus is back on the button"
    );
    assert_eq!(
        env.queue(&repo).await["state"],
        "running",
        "cancelled: nothing changed"
    );
    operate(&browser, "pause").await;
    browser.wait_for_text("#queue-state", "paused").await;
    assert_eq!(env.queue(&repo).await["state"], "paused");

    // CI submits the three pull requests: they wait while the queue is paused.
    for pr in 1..=3 {
        env.submit(&repo, pr).await;
    }
    browser
        .wait_for_text("#waiting tr[data-pr=\"1\"]", "pending")
        .await;
    browser
        .wait_for_text("#waiting tr[data-pr=\"3\"]", "pending")
        .await;
    browser.screenshot(&shots, "queue-paused.png").await;

    // Resumed: #1 tests, then merges; #2 tests with #3 behind it, with an estimate.
    operate(&browser, "resume").await;
    browser.wait_for_text("#queue-state", "running").await;
    browser
        .wait_for_text("#line li[data-pr=\"1\"]", "testing")
        .await;
    browser
        .wait_for_text("#conclusions tr[data-pr=\"1\"]", "merged")
        .await;
    browser
        .wait_for_text("#line li[data-pr=\"2\"]", "testing")
        .await;
    browser
        .wait_for_text("#waiting tr[data-pr=\"3\"] .estimate", "in about")
        .await;
    let queue_page = browser.screenshot(&shots, "queue.png").await;
    if std::env::var_os("MQ_README_SCREENSHOT").is_some() {
        let readme = mq_tables::moto::workspace_root().join("docs/images/queue-page.png");
        std::fs::create_dir_all(readme.parent().unwrap()).unwrap();
        std::fs::copy(&queue_page, &readme).unwrap();
    }

    // #3 fails, and the page says why.
    let failed = browser
        .wait_for_text("#conclusions tr[data-pr=\"3\"]", "failed")
        .await;
    assert!(failed.contains("tests failed"), "{failed}");
    assert!(failed.contains(CI), "{failed}");
    browser.screenshot(&shots, "queue-failed.png").await;

    // Advice, on demand from the real endpoint: the young queue has too little history, so it
    // gets its estimates and the reason there is no advice; auto-tuning is off.
    browser.wait_for_text("#tuning-state", "off").await;
    assert_eq!(
        browser.text_of("#advice-result").await.unwrap_or_default(),
        "",
        "no advice before it is asked for"
    );
    browser.find("#advice-run").await.click().await.unwrap();
    let none = browser
        .wait_for_text("#advice-result #advice-none", "No advice")
        .await;
    assert!(none.contains("advice needs at least"), "{none}");
    let estimates = browser.text_of("#advice-estimates").await.unwrap();
    assert!(estimates.contains("Arrivals per hour"), "{estimates}");
    browser.wait_for_text("#advice-status", "No advice").await;
    let ready = browser
        .run(
            "const b = document.getElementById('advice-run'); \
             return [b.disabled, b.textContent, document.getElementById('advice-result').getAttribute('aria-busy')];",
            vec![],
        )
        .await;
    assert_eq!(
        ready,
        json!([false, "Advise", null]),
        "the busy state is over"
    );
    browser
        .run(
            "document.getElementById('advice-title').scrollIntoView();",
            vec![],
        )
        .await;
    browser.screenshot(&shots, "queue-advice.png").await;

    // An operator's change of a tuned setting shows in auto-tuning's record on the next refresh.
    env.update_queue(&repo, json!({"concurrency": 2})).await;
    let held = browser
        .wait_for_text("#tuning-operator", "No automatic change")
        .await;
    assert!(held.contains("7 days"), "{held}");

    // Its own page: the reason, its state history, its run with the CI's link.
    browser
        .find("#conclusions tr[data-pr=\"3\"] a")
        .await
        .click()
        .await
        .unwrap();
    browser.wait_for_text("#pr-reason", "tests failed").await;
    let states = browser.wait_for_text("#pr-states", "pending failure").await;
    assert!(
        states.contains("testing") && states.contains("failed"),
        "{states}"
    );
    browser.wait_for_text("#pr-runs", CI).await;
    browser.screenshot(&shots, "pull-request.png").await;

    // Test health, after an upload: flaky tests with their strips, codeowners and ticket.
    let codeowners = [("codeowners", "* @acme/testers")];
    for (i, report) in [
        "nextest-noretry-run1.xml",
        "nextest-noretry-run2.xml",
        "nextest-retries-flaky.xml",
    ]
    .iter()
    .enumerate()
    {
        let id = format!("browser-{i}");
        let r = upload(
            &env,
            &Run::main("c1", &id),
            &codeowners,
            &[("r.xml", fixture(report))],
        )
        .await;
        assert_eq!(r.status, 200, "{:?}", r.body);
    }
    let flaky = env
        .ok(
            "flaky-tests/list-unhealthy-tests",
            &e2e::health::health_body(json!({"status": "FLAKY", "page_query": {"page_size": 10}})),
        )
        .await;
    let test_id = flaky["tests"][0]["id"].as_str().unwrap().to_owned();
    env.ok(
        "flaky-tests/link-ticket",
        &e2e::health::health_body(
            json!({"test_case_id": test_id, "ticket_url": "https://tracker.example/T-42"}),
        ),
    )
    .await;
    browser.find("#nav-health").await.click().await.unwrap();
    let table = browser
        .wait_for_text("#health-table", "tracker.example/T-42")
        .await;
    assert!(table.contains("flaky"), "{table}");
    let cells = browser
        .run(
            &format!(
                "return document.querySelectorAll('#health-table tr[data-test=\"{test_id}\"] .strip .cell').length;"
            ),
            vec![],
        )
        .await;
    assert!(
        cells.as_u64().unwrap() >= 2,
        "a strip of its results: {cells}"
    );
    browser.screenshot(&shots, "test-health.png").await;

    // The filter searches the whole list, not only the page on screen: a test of the second
    // page (of 50) is found.
    let files = [
        ("flaky.xml", generated_report("Many", 60, "flaky")),
        ("passing.xml", generated_report("ManyOk", 60, "pass")),
    ];
    let r = upload(&env, &Run::main("c2", "browser-many"), &[], &files).await;
    assert_eq!(r.status, 200, "{:?}", r.body);
    let page = |token: &str| {
        health_body(
            json!({"status": "FLAKY", "page_query": {"page_size": 50, "page_token": token}}),
        )
    };
    let first = env.ok("flaky-tests/list-unhealthy-tests", &page("")).await;
    let token = first["page"]["next_page_token"].as_str().unwrap();
    let second = env
        .ok("flaky-tests/list-unhealthy-tests", &page(token))
        .await;
    let wanted = second["tests"][0]["name"].as_str().unwrap().to_owned();
    browser
        .find("#health-filter")
        .await
        .send_keys(&wanted)
        .await
        .unwrap();
    browser.wait_for_text("#health-table", &wanted).await;
    browser.wait_for_text("#health-matches", "1 of 6").await;

    let violations = browser.run("return window.violations;", vec![]).await;
    assert_eq!(violations, json!([]), "Content-Security-Policy violations");

    // Sign out: the token is gone; another organisation sees nothing of acme's.
    browser.find("#sign-out").await.click().await.unwrap();
    browser.find("#token").await;
    let kept = browser
        .run("return sessionStorage.getItem('mq.apiToken');", vec![])
        .await;
    assert_eq!(kept, Value::Null, "signed out");
    sign_in(&browser, &base, UMBRELLA).await;
    browser.wait_for_text("#queues", "no queue yet").await;
    browser
        .goto(&format!("{base}/#/queue/github.com/acme/rocket/main"))
        .await;
    let refused = browser.wait_for_text("#notice", "Could not load").await;
    assert!(refused.contains("repository"), "{refused}");
    let shown = browser.text_of("#line").await.unwrap_or_default();
    assert!(shown.is_empty(), "nothing of acme's queue: {shown}");
    let theirs = env
        .post(
            "getPullRequestHistory",
            Some(UMBRELLA),
            &pr_body(&repo, 3, json!({})),
        )
        .await;
    assert_eq!(theirs.status, 404);
    assert_eq!(env.queue(&repo).await["state"], "running");

    browser.stop().await;
    println!(
        "dashboard browser test: {:.1} s, screenshots in {}",
        started.elapsed().as_secs_f64(),
        shots.display()
    );
}
