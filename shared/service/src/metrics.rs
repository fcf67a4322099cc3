//! Metrics: each queue's figures, from its snapshot and the last hour of its history.
//!
//! The store reads an organisation's queues' facts ([`QueueStore::metrics_facts`]: on
//! DynamoDB, four `Query`s per queue, several queues at once), and the figures are computed
//! from them. A queue that cannot be read is logged and named apart
//! ([`MetricsFacts::unreadable`]): the others' figures are still given, so one queue's item
//! that this version cannot decode does not blind every alert on the organisation's queues.

use crate::app::App;
use crate::error::ServiceError;
use mq_core::ids::{OrgId, RepoRef};
use mq_core::metrics::{QueueFacts, QueueFigures, QueueName, Window, figures};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_store::{MetricsFacts, QueueStore, StoreError};
use std::collections::HashMap;
use std::sync::Arc;

/// The figures of a queue whose snapshot the caller already holds (as the tick does).
pub async fn figures_of_snapshot(
    store: &dyn QueueStore,
    snapshot: QueueSnapshot,
    now: Timestamp,
) -> Result<QueueFigures, StoreError> {
    let window = Window::last_hour(&snapshot.queue, now);
    let history = store.history(&snapshot.queue.id, window).await?;
    let snapshot = Arc::new(snapshot);
    Ok(figures(&QueueFacts { snapshot, history }, now))
}

/// The figures of the organisation's queues, or of its queues on `repo`, ordered by
/// repository and branch ([`owned_queue_facts`]), and the names of those that could not be
/// read. When `repo` is given: 404 `REPOSITORY_NOT_FOUND` unless the organisation owns it; a
/// repository it owns without a queue has no figures, as an organisation without queues has
/// none: a scrape of a queue deleted (or not yet created) succeeds with nothing, and does not
/// read as the endpoint down.
pub async fn figures_of(
    app: &App,
    org: &OrgId,
    repo: Option<&RepoRef>,
) -> Result<(Vec<QueueFigures>, Vec<QueueName>), ServiceError> {
    let now = app.now();
    let facts = owned_queue_facts(app, org, repo, now).await?;
    let figures = facts.read.iter().map(|facts| figures(facts, now)).collect();
    let unreadable = facts
        .unreadable
        .iter()
        .map(|(q, _)| QueueName::of(q))
        .collect();
    Ok((figures, unreadable))
}

/// The facts of the organisation's queues (or of its queues on `repo`, 404
/// `REPOSITORY_NOT_FOUND` unless it owns `repo`), and the queues whose reads failed (each
/// logged with its error), both ordered by repository and branch. Only the organisation's queues are read, and a queue it
/// recorded on an owner it no longer owns is left out (one owner lookup per owner; with
/// `repo`, the one check of `repo`): every endpoint answers 404 for that repository.
pub async fn owned_queue_facts(
    app: &App,
    org: &OrgId,
    repo: Option<&RepoRef>,
    now: Timestamp,
) -> Result<MetricsFacts, ServiceError> {
    let key = repo.map(RepoRef::key);
    let owned = async {
        match repo {
            Some(repo) => super::owners::check_repo(app, org, repo).await,
            None => Ok(()),
        }
    };
    let (owned, facts) = tokio::join!(owned, app.store.metrics_facts(org, key.as_deref(), now));
    owned?;
    let mut facts = facts?;
    if repo.is_none() {
        keep_owned(app, org, &mut facts).await?;
    }
    for (queue, error) in &facts.unreadable {
        tracing::error!(queue = %queue.id, %error, "queue left out of the figures: it could not be read");
    }
    facts
        .read
        .sort_by(|a, b| in_order(&a.snapshot.queue, &b.snapshot.queue));
    facts.unreadable.sort_by(|(a, _), (b, _)| in_order(a, b));
    Ok(facts)
}

/// Queues in order of repository, then branch.
fn in_order(a: &Queue, b: &Queue) -> std::cmp::Ordering {
    a.repo
        .cmp_key(&b.repo)
        .then_with(|| a.branch.cmp(&b.branch))
}

/// Leaves out the queues on owners `org` does not own: one owner lookup per owner.
async fn keep_owned(app: &App, org: &OrgId, facts: &mut MetricsFacts) -> Result<(), ServiceError> {
    let mut owners: HashMap<String, bool> = HashMap::new();
    let read = facts.read.iter().map(|f| &f.snapshot.queue);
    for queue in read.chain(facts.unreadable.iter().map(|(q, _)| q)) {
        let owner = queue.repo.owner_ref().key();
        if let std::collections::hash_map::Entry::Vacant(slot) = owners.entry(owner) {
            let owns = super::owners::organisation_of(app, slot.key())
                .await?
                .as_ref()
                == Some(org);
            slot.insert(owns);
        }
    }
    let owned = |queue: &Queue| owners[&queue.repo.owner_ref().key()];
    facts.read.retain(|f| owned(&f.snapshot.queue));
    facts.unreadable.retain(|(q, _)| owned(q));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::app::ManualClock;
    use mq_core::ErrorCode;
    use mq_core::settings::{QueueConfig, QueueState};
    use mq_core::snapshot::Queue;
    use mq_store::{MemoryStore, OwnerStore};

    const NOW: Timestamp = Timestamp(1_795_000_000_000);

    async fn app_with(queues: &[(&str, &str, &str)]) -> App {
        let store = Arc::new(MemoryStore::new());
        for (org, repo, branch) in queues {
            let queue = Queue::new(
                OrgId::parse(org).unwrap(),
                RepoRef::new("github.com", "acme", repo).unwrap(),
                (*branch).to_owned(),
                QueueConfig::default(),
                QueueState::Running,
                Timestamp(0),
            );
            store.create_queue(&queue).await.unwrap();
        }
        let acme = mq_store::OwnerLink {
            owner: mq_core::ids::OwnerRef::parse("owner", "github.com/acme").unwrap(),
            org: OrgId::parse("acme").unwrap(),
            linked_at: Timestamp(0),
            account_id: None,
        };
        store.link_owner(&acme).await.unwrap();
        App::new(store, Arc::new(ManualClock::new(NOW)))
    }

    fn labels(figures: &[QueueFigures]) -> Vec<(String, String)> {
        figures
            .iter()
            .map(|f| (f.repo.clone(), f.branch.clone()))
            .collect()
    }

    #[tokio::test]
    async fn an_organisation_sees_its_own_queues_in_order() {
        let app = app_with(&[
            ("acme", "rocket", "main"),
            ("umbrella", "rocket", "release"),
            ("acme", "probe", "main"),
            ("acme", "rocket", "dev"),
        ])
        .await;
        let acme = OrgId::parse("acme").unwrap();
        let (all, unreadable) = figures_of(&app, &acme, None).await.unwrap();
        assert!(unreadable.is_empty());
        let expected = [("probe", "main"), ("rocket", "dev"), ("rocket", "main")]
            .map(|(r, b)| (format!("acme/{r}"), b.to_owned()));
        assert_eq!(labels(&all), expected);

        let rocket = RepoRef::new("github.com", "ACME", "Rocket").unwrap();
        let (one, _) = figures_of(&app, &acme, Some(&rocket)).await.unwrap();
        assert_eq!(
            labels(&one),
            expected[1..],
            "umbrella's release queue is not acme's"
        );
    }

    #[tokio::test]
    async fn a_repository_of_the_organisation_without_queues_has_no_figures() {
        let app = app_with(&[("umbrella", "hive", "main")]).await;
        let acme = OrgId::parse("acme").unwrap();
        let hive = RepoRef::new("github.com", "acme", "hive").unwrap();
        assert!(
            figures_of(&app, &acme, Some(&hive))
                .await
                .unwrap()
                .0
                .is_empty()
        );
        assert!(figures_of(&app, &acme, None).await.unwrap().0.is_empty());
        let umbrella = OrgId::parse("umbrella").unwrap();
        let err = figures_of(&app, &umbrella, Some(&hive)).await.unwrap_err();
        assert!(
            err.is(ErrorCode::RepositoryNotFound),
            "umbrella's own queue on a repository acme owns is not umbrella's to read: {err}"
        );
    }
}
