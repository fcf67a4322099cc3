//! Test health scenarios of the store contract.

use super::fixtures::{T0, org};
use mq_core::health::{
    NewResult, Outcome, QuarantineOverride, RepoHealthSettings, ResultRecord, StatusKind, TestCase,
    TestIdentity, Thresholds, UploadMetadata, test_case_id, upload_key,
};
use mq_core::ids::RepoRef;
use mq_core::time::Timestamp;
use mq_store::{
    HealthScope, PageCursor, RawResult, Store, StoreError, TestList, UploadRecord, UploadState,
};
use std::sync::Arc;
use uuid::Uuid;

fn repo() -> RepoRef {
    RepoRef::new("github.com", "acme", "rocket").unwrap()
}

fn scope(org_name: &str) -> HealthScope {
    HealthScope {
        org: org(org_name),
        repo_key: repo().key(),
    }
}

/// A stored-to-be test case (version 1) of acme's rocket, FLAKY or BROKEN or HEALTHY.
pub fn case(org_name: &str, name: &str, kind: StatusKind) -> TestCase {
    let identity = TestIdentity {
        name: name.to_owned(),
        classname: "suite".to_owned(),
        ..TestIdentity::default()
    };
    let id = test_case_id(&repo(), &identity);
    let mut c = TestCase::new(id, org(org_name), repo(), identity, T0);
    let t = Thresholds::default();
    let outcomes: &[Outcome] = match kind {
        StatusKind::Healthy => &[Outcome::Passed],
        StatusKind::Flaky => &[Outcome::PassedOnRetry],
        StatusKind::Broken => &[Outcome::Failed; 3],
    };
    for (i, o) in outcomes.iter().enumerate() {
        let record = ResultRecord {
            commit: format!("c{i}"),
            stable: true,
            outcome: *o,
            at: T0,
            upload: format!("u{i}"),
        };
        c.record(NewResult { record, pr: None }, &t, T0);
    }
    assert_eq!(c.status.kind, kind);
    c.version = 1;
    c
}

fn ids(cases: &[TestCase]) -> Vec<Uuid> {
    cases.iter().map(|c| c.id).collect()
}

pub async fn health_settings_are_versioned(store: Arc<dyn Store>) {
    let s = scope("acme");
    assert_eq!(store.health_settings(&s).await.unwrap(), None);
    let mut settings = RepoHealthSettings {
        quarantining: true,
        version: 1,
        ..RepoHealthSettings::default()
    };
    store.put_health_settings(&s, &settings).await.unwrap();
    assert_eq!(
        store.put_health_settings(&s, &settings).await,
        Err(StoreError::Conflict),
        "a second first write loses"
    );
    settings.version = 2;
    settings.thresholds.broken_window = 10;
    store.put_health_settings(&s, &settings).await.unwrap();
    assert_eq!(store.health_settings(&s).await.unwrap(), Some(settings));
    assert_eq!(
        store.health_settings(&scope("umbrella")).await.unwrap(),
        None
    );
    store.put_codeowners(&s, "* @acme/all").await.unwrap();
    assert_eq!(
        store.codeowners(&s).await.unwrap().as_deref(),
        Some("* @acme/all")
    );
}

pub async fn test_case_writes_are_conditional_on_the_version(store: Arc<dyn Store>) {
    let s = scope("acme");
    let a = case("acme", "a", StatusKind::Flaky);
    let b = case("acme", "b", StatusKind::Healthy);
    assert!(
        store
            .put_test_cases(&[a.clone(), b.clone()])
            .await
            .unwrap()
            .is_empty()
    );
    let lost = store
        .put_test_cases(std::slice::from_ref(&a))
        .await
        .unwrap();
    assert_eq!(lost, [a.id], "creating it again loses");
    let mut a2 = a.clone();
    a2.version = 2;
    a2.ticket_url = Some("https://tracker/T-1".into());
    assert!(
        store
            .put_test_cases(std::slice::from_ref(&a2))
            .await
            .unwrap()
            .is_empty()
    );
    let mut stale = a.clone();
    stale.version = 2;
    assert_eq!(store.put_test_cases(&[stale]).await.unwrap(), [a.id]);
    let mut got = store
        .get_test_cases(&s, &[a.id, b.id, Uuid::nil(), a.id])
        .await
        .unwrap();
    got.sort_by_key(|c| c.name_for_sort());
    assert_eq!(got, [a2, b], "each asked for once, even when asked twice");
    assert!(
        store
            .get_test_cases(&scope("umbrella"), &[a.id])
            .await
            .unwrap()
            .is_empty()
    );
}

/// Test cases that weigh more together than one DynamoDB transaction holds (4 MB: here 120
/// tests named with 40,000 characters) are all written.
pub async fn test_cases_heavier_than_a_transaction_are_written_whole(store: Arc<dyn Store>) {
    let s = scope("acme");
    let cases: Vec<TestCase> = (0..120)
        .map(|i| {
            case(
                "acme",
                &format!("{i:03}{}", "x".repeat(40_000)),
                StatusKind::Healthy,
            )
        })
        .collect();
    assert_eq!(store.put_test_cases(&cases).await, Ok(vec![]));
    let (_, read) = store
        .settings_and_test_cases(&s, &ids(&cases))
        .await
        .unwrap();
    assert_eq!(read.len(), 120);
}

pub async fn repository_items_are_read_with_test_cases(store: Arc<dyn Store>) {
    let s = scope("acme");
    assert_eq!(
        store.settings_and_test_cases(&s, &[Uuid::nil()]).await,
        Ok((None, vec![]))
    );
    assert_eq!(store.settings_and_codeowners(&s).await, Ok((None, None)));
    // More test cases than one DynamoDB batch read holds with the settings.
    let mut cases: Vec<TestCase> = (0..150)
        .map(|i| case("acme", &format!("t{i:03}"), StatusKind::Healthy))
        .collect();
    assert!(store.put_test_cases(&cases).await.unwrap().is_empty());
    let settings = RepoHealthSettings {
        quarantining: true,
        version: 1,
        ..RepoHealthSettings::default()
    };
    store.put_health_settings(&s, &settings).await.unwrap();

    let mut asked = ids(&cases);
    asked.insert(70, Uuid::nil());
    // The same test twice, as a report of two failures of one test asks.
    asked.insert(120, cases[3].id);
    let (read_settings, mut read) = store.settings_and_test_cases(&s, &asked).await.unwrap();
    read.sort_by_key(|c| c.name_for_sort());
    cases.sort_by_key(|c| c.name_for_sort());
    assert_eq!(read_settings.as_ref(), Some(&settings));
    assert_eq!(read, cases, "every stored test case asked for, once");
    assert_eq!(
        store
            .settings_and_test_cases(&scope("umbrella"), &asked)
            .await,
        Ok((None, vec![])),
        "another organisation's scope reads neither"
    );

    assert_eq!(
        store.settings_and_codeowners(&s).await,
        Ok((Some(settings.clone()), None))
    );
    store.put_codeowners(&s, "* @acme/all").await.unwrap();
    assert_eq!(
        store.settings_and_codeowners(&s).await,
        Ok((Some(settings), Some("* @acme/all".to_owned())))
    );
}

trait SortName {
    fn name_for_sort(&self) -> String;
}

impl SortName for TestCase {
    fn name_for_sort(&self) -> String {
        self.identity.name.clone()
    }
}

pub async fn lists_are_in_id_order_and_page_both_ways(store: Arc<dyn Store>) {
    let s = scope("acme");
    let flaky: Vec<TestCase> = (0..23)
        .map(|i| case("acme", &format!("flaky{i}"), StatusKind::Flaky))
        .collect();
    let broken: Vec<TestCase> = (0..4)
        .map(|i| case("acme", &format!("broken{i}"), StatusKind::Broken))
        .collect();
    let healthy = case("acme", "healthy", StatusKind::Healthy);
    let mut all = flaky.clone();
    all.extend(broken.clone());
    all.push(healthy);
    store.put_test_cases(&all).await.unwrap();
    store
        .put_test_cases(&[case("umbrella", "flaky0", StatusKind::Flaky)])
        .await
        .unwrap();

    let list = TestList::WithStatus(StatusKind::Flaky);
    assert_eq!(store.count_test_cases(&s, list).await.unwrap(), 23);
    let broken_list = TestList::WithStatus(StatusKind::Broken);
    assert_eq!(store.count_test_cases(&s, broken_list).await.unwrap(), 4);
    let mut sorted = ids(&flaky);
    sorted.sort();

    let first = store
        .list_test_cases(&s, list, PageCursor::First, 10)
        .await
        .unwrap();
    assert_eq!(ids(&first), sorted[..10]);
    let after = PageCursor::After(sorted[9]);
    let second = store.list_test_cases(&s, list, after, 10).await.unwrap();
    assert_eq!(ids(&second), sorted[10..20]);
    let third = store
        .list_test_cases(&s, list, PageCursor::After(sorted[19]), 10)
        .await
        .unwrap();
    assert_eq!(ids(&third), sorted[20..]);
    let before = PageCursor::Before(sorted[20]);
    let back = store.list_test_cases(&s, list, before, 10).await.unwrap();
    assert_eq!(
        ids(&back),
        sorted[10..20],
        "a page back, still in ascending order"
    );
    let last = store
        .list_test_cases(&s, list, PageCursor::Last, 3)
        .await
        .unwrap();
    assert_eq!(ids(&last), sorted[20..]);
    let umbrella = store
        .list_test_cases(&scope("umbrella"), list, PageCursor::First, 100)
        .await
        .unwrap();
    assert_eq!(umbrella.len(), 1, "organisations do not share lists");
}

pub async fn a_status_change_moves_a_test_between_lists(store: Arc<dyn Store>) {
    let s = scope("acme");
    let mut c = case("acme", "t", StatusKind::Flaky);
    store
        .put_test_cases(std::slice::from_ref(&c))
        .await
        .unwrap();
    let flaky = TestList::WithStatus(StatusKind::Flaky);
    let quarantine = TestList::Quarantine {
        overrides_only: false,
    };
    assert_eq!(store.count_test_cases(&s, flaky).await.unwrap(), 1);
    assert_eq!(store.count_test_cases(&s, quarantine).await.unwrap(), 1);
    c.reclassify(&Thresholds::default(), T0.plus_millis(8 * 86_400_000));
    assert_eq!(c.status.kind, StatusKind::Healthy);
    c.version = 2;
    store
        .put_test_cases(std::slice::from_ref(&c))
        .await
        .unwrap();
    assert_eq!(store.count_test_cases(&s, flaky).await.unwrap(), 0);
    assert_eq!(store.count_test_cases(&s, quarantine).await.unwrap(), 0);
}

pub async fn quarantine_list_can_hold_overrides_only(store: Arc<dyn Store>) {
    let s = scope("acme");
    let auto = case("acme", "auto", StatusKind::Flaky);
    let mut always = case("acme", "always", StatusKind::Healthy);
    always.set_quarantine(QuarantineOverride::AlwaysQuarantine, T0);
    let mut never = case("acme", "never", StatusKind::Flaky);
    never.set_quarantine(QuarantineOverride::NeverQuarantine, T0);
    store
        .put_test_cases(&[auto.clone(), always.clone(), never])
        .await
        .unwrap();
    let all = TestList::Quarantine {
        overrides_only: false,
    };
    let mut expected = vec![auto.id, always.id];
    expected.sort();
    let page = store
        .list_test_cases(&s, all, PageCursor::First, 10)
        .await
        .unwrap();
    assert_eq!(ids(&page), expected);
    let only = TestList::Quarantine {
        overrides_only: true,
    };
    let page = store
        .list_test_cases(&s, only, PageCursor::First, 10)
        .await
        .unwrap();
    assert_eq!(ids(&page), [always.id]);
    assert_eq!(store.count_test_cases(&s, only).await.unwrap(), 1);
}

pub fn upload(upload_id: &str) -> UploadRecord {
    let metadata = UploadMetadata {
        repo: repo(),
        commit_sha: "a".repeat(40),
        branch: "main".into(),
        pr_number: None,
        variant: String::new(),
        job_url: None,
        upload_id: upload_id.into(),
    };
    UploadRecord {
        org: org("acme"),
        key: upload_key(&org("acme"), &metadata),
        state: UploadState::Ingesting,
        metadata,
        created_at: T0,
        summary: None,
        error: None,
    }
}

pub async fn uploads_are_claimed_once_and_keep_raw_results(store: Arc<dyn Store>) {
    let u = upload("build-1");
    assert_eq!(store.claim_upload(&u).await.unwrap(), None);
    assert_eq!(store.claim_upload(&u).await.unwrap(), Some(u.clone()));
    let results: Vec<RawResult> = (0..2500u128)
        .map(|i| RawResult {
            id: Uuid::from_u128(i),
            outcome: Outcome::Passed,
            attempts: 1,
        })
        .collect();
    store.put_raw_results(&u, &results).await.unwrap();
    assert_eq!(store.raw_results(&u.org, u.key).await.unwrap(), results);
    let mut done = u.clone();
    done.state = UploadState::Done;
    store.put_upload(&done).await.unwrap();
    assert_eq!(store.get_upload(&u.org, u.key).await.unwrap(), Some(done));
    assert_eq!(
        store.get_upload(&org("umbrella"), u.key).await.unwrap(),
        None
    );
}

pub async fn flaky_tests_due_for_recovery_are_found(store: Arc<dyn Store>) {
    let flaky = case("acme", "flaky", StatusKind::Flaky);
    let broken = case("acme", "broken", StatusKind::Broken);
    store
        .put_test_cases(&[flaky.clone(), broken])
        .await
        .unwrap();
    let until = flaky.flaky_until.unwrap();
    assert!(
        store
            .due_for_recovery(until.plus_millis(-1), 10)
            .await
            .unwrap()
            .is_empty()
    );
    let due = store.due_for_recovery(until, 10).await.unwrap();
    assert_eq!(ids(&due), [flaky.id]);
}

pub async fn concurrent_result_merges_lose_nothing(store: Arc<dyn Store>) {
    let s = scope("acme");
    let cases: Vec<TestCase> = (0..30)
        .map(|i| case("acme", &format!("t{i}"), StatusKind::Healthy))
        .collect();
    store.put_test_cases(&cases).await.unwrap();
    let all = ids(&cases);
    let writers = (0..4).map(|w| {
        let store = store.clone();
        let (s, all) = (s.clone(), all.clone());
        tokio::spawn(async move { merge_upload(&*store, &s, &all, &format!("w{w}")).await })
    });
    for w in writers.collect::<Vec<_>>() {
        w.await.unwrap();
    }
    for c in store.get_test_cases(&s, &all).await.unwrap() {
        for w in 0..4 {
            assert!(
                c.has_upload(&format!("w{w}")),
                "{} lost w{w}",
                c.identity.name
            );
        }
        assert_eq!(c.version, 5);
    }
}

/// Read, add a result, write back; again for those that lost a race.
async fn merge_upload(store: &dyn Store, s: &HealthScope, ids: &[Uuid], upload: &str) {
    let mut pending = ids.to_vec();
    for _ in 0..50 {
        let mut cases = store.get_test_cases(s, &pending).await.unwrap();
        for c in &mut cases {
            let record = ResultRecord {
                commit: upload.into(),
                stable: false,
                outcome: Outcome::Passed,
                at: Timestamp(T0.millis() + 1),
                upload: upload.into(),
            };
            c.record(NewResult { record, pr: None }, &Thresholds::default(), T0);
            c.version += 1;
        }
        pending = store.put_test_cases(&cases).await.unwrap();
        if pending.is_empty() {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    panic!("{upload} never settled");
}
