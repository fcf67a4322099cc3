//! Queues, their live snapshot and their history on DynamoDB.

use super::DynamoStore;
use super::codec::{Item, from_item, from_optional_item, get_s, key, n, s, to_item};
use super::keys::*;
use super::large_commit::{
    ATTACHED_PARTS_SECONDS, FINISHED_PARTS_SECONDS, REDO, REDO_PART, RedoParts, STEP_ITEMS, cut,
};
use super::requests::{Pages, TransactionFailed, backoff, map_sdk_error, query_all};
use super::transaction_limits::{
    MAX_TRANSACTION_ITEMS, TRANSACTION_BUDGET, Write, delete_action, fit_one_transaction, groups,
    item_bytes, total_bytes,
};
use crate::error::StoreError;
use crate::port::{QueueStore, RunLocation, StoreResult};
use async_trait::async_trait;
use aws_sdk_dynamodb::operation::query::builders::QueryFluentBuilder;
use aws_sdk_dynamodb::types::{
    ConditionCheck, Delete, Put, ReturnValuesOnConditionCheckFailure, TransactWriteItem,
};
use mq_core::engine::PendingEffect;
use mq_core::entry::{Entry, UploadedTargets};
use mq_core::history::Restart;
use mq_core::ids::{OrgId, PrNumber, QueueId, Sha};
use mq_core::metrics::Window;
use mq_core::run::TestRun;
use mq_core::snapshot::{Commit, LiveChanges, Queue, QueueSnapshot};
use mq_core::time::Timestamp;

/// An item and the table it goes to.
type TableItem = (String, Item);

#[async_trait]
impl QueueStore for DynamoStore {
    async fn create_queue(&self, queue: &Queue) -> StoreResult<()> {
        let item = queue_item(queue, 0, false)?;
        match self.put_new_item(&self.tables.queues, item, PK).await {
            Err(StoreError::Conflict) => Err(StoreError::AlreadyExists),
            other => other,
        }
    }

    async fn load(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>> {
        let mut read_before = None;
        for retry in 0.. {
            let mut pages = Pages::of(self.partition_query(&self.tables.queues, id.as_str()));
            let first = pages.next(None).await?.and_then(|out| out.items);
            if !pages.finished() {
                return self.load_in_pages(id).await;
            }
            let items = first.unwrap_or_default();
            let queue_version = version_in(&items, QUEUE_SK);
            if read_at_one_version(&items)
                || (queue_version.is_some() && queue_version == read_before)
            {
                return self.snapshot_from(id, items).await;
            }
            read_before = queue_version;
            backoff(retry, "the queue kept changing while it was read").await?;
        }
        unreachable!("backoff gives up first")
    }

    async fn commit(&self, commit: &Commit) -> StoreResult<()> {
        let mut writes = self.first_writes(commit, None)?;
        writes.extend(self.live_writes(commit.queue.id.as_str(), &commit.live)?);
        let history = self.history_items(commit)?;
        if fit_one_transaction(&writes) {
            self.commit_at_once(commit, writes, history).await
        } else {
            self.commit_in_steps(commit, history).await
        }
    }

    async fn delete_queue(&self, snapshot: &QueueSnapshot) -> StoreResult<()> {
        if !snapshot.entries.is_empty() {
            return Err(StoreError::NotEmpty);
        }
        let id = snapshot.queue.id.as_str();
        let guard = Delete::builder()
            .table_name(&self.tables.queues)
            .set_key(Some(key(id, QUEUE_SK)))
            .condition_expression(
                "#v = :v AND #created = :created AND #active = :zero \
                 AND attribute_not_exists(#redo)",
            )
            .expression_attribute_names("#v", VERSION)
            .expression_attribute_names("#created", CREATED_AT)
            .expression_attribute_names("#active", ACTIVE_ENTRIES)
            .expression_attribute_names("#redo", REDO)
            .expression_attribute_values(":v", n(snapshot.queue.version))
            .expression_attribute_values(":created", n(snapshot.queue.created_at.millis()))
            .expression_attribute_values(":zero", n(0))
            .build()
            .map_err(StoreError::internal)?;
        let mut actions = vec![TransactWriteItem::builder().delete(guard).build()];
        let mut sks: Vec<String> = vec![LEASE_SK.to_owned(), VERSION_SK.to_owned()];
        sks.extend(snapshot.runs.iter().map(|r| run_sk(&r.id)));
        let mut effects = self.effect_keys(id).await?;
        let room = MAX_TRANSACTION_ITEMS.saturating_sub(1 + sks.len());
        let after = effects.split_off(room.min(effects.len()));
        sks.extend(effects);
        for sk in sks {
            actions.push(delete_action(&self.tables.queues, key(id, &sk))?);
        }
        let deleted = self.transact(actions).await;
        if deleted.is_ok() {
            self.delete_left_over(id, after).await;
        }
        match deleted {
            // A large commit still being written would leave the items it has yet to delete
            // behind: it is finished first, and the caller tries again.
            Err(StoreError::Conflict) => match self.finished_then_loaded(&snapshot.queue.id).await?
            {
                None => Err(StoreError::NotFound),
                Some(now) if !now.entries.is_empty() => Err(StoreError::NotEmpty),
                Some(_) => Err(StoreError::Conflict),
            },
            other => other,
        }
    }

    async fn load_queue(&self, id: &QueueId) -> StoreResult<Option<Queue>> {
        let item = self
            .get_item(&self.tables.queues, key(id.as_str(), QUEUE_SK))
            .await?;
        from_optional_item(item)
    }

    async fn load_entry(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<(Queue, Option<Entry>)>> {
        let q = id.as_str();
        let mut found = self
            .batch_get(vec![
                (self.tables.queues.clone(), key(q, QUEUE_SK)),
                (self.tables.queues.clone(), key(q, &entry_sk(pr))),
                (self.tables.pull_requests.clone(), key(q, &latest_pr_sk(pr))),
            ])
            .await?;
        let Some(queue_item) = take(&mut found, &self.tables.queues, QUEUE_SK) else {
            return Ok(None);
        };
        let queue: Queue = from_item(queue_item)?;
        let active = from_optional_item(take(&mut found, &self.tables.queues, &entry_sk(pr)))?;
        let concluded = from_optional_item(take(
            &mut found,
            &self.tables.pull_requests,
            &latest_pr_sk(pr),
        ))?;
        let entry = crate::order::latest_entry(&queue, active.as_ref(), concluded.as_ref());
        Ok(Some((queue, entry)))
    }

    async fn load_run(
        &self,
        id: &QueueId,
        run_id: &str,
    ) -> StoreResult<Option<(Queue, Option<TestRun>)>> {
        let q = id.as_str();
        let mut found = self
            .batch_get(vec![
                (self.tables.queues.clone(), key(q, QUEUE_SK)),
                (self.tables.queues.clone(), key(q, &run_sk(run_id))),
                (self.tables.test_runs.clone(), key(q, run_id)),
            ])
            .await?;
        let Some(queue_item) = take(&mut found, &self.tables.queues, QUEUE_SK) else {
            return Ok(None);
        };
        let queue: Queue = from_item(queue_item)?;
        let active = from_optional_item(take(&mut found, &self.tables.queues, &run_sk(run_id)))?;
        let finished = from_optional_item(take(&mut found, &self.tables.test_runs, run_id))?;
        let run = crate::order::current_run(&queue, active.as_ref(), finished.as_ref());
        Ok(Some((queue, run)))
    }

    async fn queues_of_org(&self, org: &OrgId) -> StoreResult<Vec<Queue>> {
        let query = self.index_query(&self.tables.queues, ORG_INDEX, ORG_KEY, org.as_str());
        Ok(listed_queues(query_all(query).await?))
    }

    async fn queues_of_repo(&self, repo_key: &str) -> StoreResult<Vec<Queue>> {
        let query = self.index_query(&self.tables.queues, REPO_INDEX, REPO_KEY, repo_key);
        Ok(listed_queues(query_all(query).await?))
    }

    async fn put_uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
        targets: &UploadedTargets,
    ) -> StoreResult<()> {
        let item = uploaded_targets_item(id.as_str(), pr, targets)?;
        self.put_item(&self.tables.pull_requests, item).await
    }

    async fn uploaded_targets(
        &self,
        id: &QueueId,
        pr: PrNumber,
    ) -> StoreResult<Option<UploadedTargets>> {
        let key = key(id.as_str(), &targets_sk(pr));
        from_optional_item(self.get_item(&self.tables.pull_requests, key).await?)
    }

    async fn queues_with_work(&self) -> StoreResult<Vec<QueueId>> {
        let queues = &self.tables.queues;
        let query = self.index_query(queues, WORK_INDEX, WORK_SHARD, WORK_SHARD_VALUE);
        Ok(query_all(query)
            .await?
            .iter()
            .filter_map(|i| get_s(i, PK))
            .map(|id| QueueId::from_stored(id.to_owned()))
            .collect())
    }

    async fn runs_by_sha(&self, sha: &Sha) -> StoreResult<Vec<RunLocation>> {
        let query = self.index_query(&self.tables.queues, SHA_INDEX, TEST_SHA, sha.as_str());
        Ok(query_all(query)
            .await?
            .iter()
            .filter_map(|i| {
                let queue = get_s(i, PK)?;
                let run_id = get_s(i, SK)?.strip_prefix(RUN_PREFIX)?;
                Some(RunLocation {
                    queue: QueueId::from_stored(queue.to_owned()),
                    run_id: run_id.to_owned(),
                })
            })
            .collect())
    }

    async fn acquire_lease(
        &self,
        id: &QueueId,
        owner: &str,
        now: Timestamp,
        until: Timestamp,
    ) -> StoreResult<bool> {
        let mut item = key(id.as_str(), LEASE_SK);
        item.insert(LEASE_OWNER.to_owned(), s(owner));
        item.insert(LEASE_UNTIL.to_owned(), n(until.millis()));
        item.insert(EXPIRES_AT.to_owned(), n(until.millis() / 1000 + 3600));
        let queue_exists = self.queue_exists_check(id)?;
        let lease = Put::builder()
            .table_name(&self.tables.queues)
            .set_item(Some(item))
            .condition_expression("attribute_not_exists(#pk) OR #until <= :now OR #owner = :owner")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#until", LEASE_UNTIL)
            .expression_attribute_names("#owner", LEASE_OWNER)
            .expression_attribute_values(":now", n(now.millis()))
            .expression_attribute_values(":owner", s(owner))
            .build()
            .map_err(StoreError::internal)?;
        let actions = vec![
            queue_exists,
            TransactWriteItem::builder().put(lease).build(),
        ];
        for retry in 0.. {
            // A commit writing the queue item at the same moment cancels the transaction
            // without the lease being held: try again.
            match self.transact_write(actions.clone()).await {
                Ok(()) => return Ok(true),
                Err(failed) if failed.met_another_transaction() => {
                    backoff(
                        retry,
                        "the queue kept being written while its lease was taken",
                    )
                    .await?;
                }
                Err(TransactionFailed {
                    error: StoreError::Conflict,
                    ..
                }) => {
                    return match self.load(id).await? {
                        None => Err(StoreError::NotFound),
                        Some(_) => Ok(false),
                    };
                }
                Err(failed) => return Err(failed.error),
            }
        }
        unreachable!("backoff gives up first")
    }

    async fn release_lease(&self, id: &QueueId, owner: &str) -> StoreResult<()> {
        let lease = key(id.as_str(), LEASE_SK);
        let released = self.delete_item_if(&self.tables.queues, lease, LEASE_OWNER, s(owner));
        match released.await {
            Ok(_) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e),
        }
    }
}

impl DynamoStore {
    /// Deletes the outbox items of a deleted queue that did not fit in its delete's
    /// transaction, a transaction at a time. One left by a failure is an outbox item older
    /// than any queue created on the branch later, which leaves it out of its snapshots
    /// ([`snapshot_from_items`]).
    async fn delete_left_over(&self, id: &str, sks: Vec<String>) {
        for chunk in sks.chunks(MAX_TRANSACTION_ITEMS) {
            let actions: StoreResult<Vec<TransactWriteItem>> = chunk
                .iter()
                .map(|sk| delete_action(&self.tables.queues, key(id, sk)))
                .collect();
            let done = match actions {
                Ok(actions) => self.transact(actions).await,
                Err(e) => Err(e),
            };
            if let Err(error) = done {
                tracing::warn!(queue = id, %error, "outbox items of a deleted queue are left");
                return;
            }
        }
    }

    /// The sort keys of every outbox item of queue `id`, those of effects this version cannot
    /// read included (they are left out of its snapshots, not out of its deletion).
    async fn effect_keys(&self, id: &str) -> StoreResult<Vec<String>> {
        let query = self
            .partition_query(&self.tables.queues, id)
            .key_condition_expression("#pk = :pk AND begins_with(#sk, :effect)")
            .expression_attribute_names("#sk", SK)
            .expression_attribute_values(":effect", s(EFFECT_PREFIX))
            .projection_expression("#sk");
        let items = query_all(query).await?;
        Ok(items
            .iter()
            .filter_map(|item| get_s(item, SK).map(str::to_owned))
            .collect())
    }

    /// One transaction: `writes` (the queue item and every live change), and as much
    /// history as fits.
    async fn commit_at_once(
        &self,
        commit: &Commit,
        writes: Vec<Write>,
        history: Vec<TableItem>,
    ) -> StoreResult<()> {
        let (actions, later) = with_history_that_fits(writes, history)?;
        self.transact_guarded(&commit.queue.id, actions).await?;
        // History that did not fit is written after the commit: it never describes a change
        // that did not happen, and the writes are idempotent.
        self.batch_put(later).await
    }

    /// A commit too large for one transaction: see [`super::large_commit`].
    async fn commit_in_steps(&self, commit: &Commit, history: Vec<TableItem>) -> StoreResult<()> {
        let id = commit.queue.id.as_str();
        let redo = self.put_redo_parts(commit).await?;
        let first = self.first_writes(commit, Some(&redo))?;
        let (actions, later) = with_history_that_fits(first, history)?;
        match self.transact_guarded(&commit.queue.id, actions).await {
            Err(StoreError::Conflict) => {
                // Another commit came first: the parts are never named.
                self.expire_redo_parts(id, &redo).await;
                return Err(StoreError::Conflict);
            }
            other => other?,
        }
        self.apply_redo(&commit.queue, &commit.live, Some(&redo))
            .await?;
        self.batch_put(later).await
    }

    /// Puts the parts of a large commit's redo (step 1 of [`super::large_commit`]).
    async fn put_redo_parts(&self, commit: &Commit) -> StoreResult<RedoParts> {
        let id = commit.queue.id.as_str();
        let json = serde_json::to_string(&commit.live).map_err(StoreError::internal)?;
        let pieces = cut(&json);
        let token = uuid::Uuid::new_v4().to_string();
        let redo = RedoParts::new(commit.queue.version, &token, pieces.len());
        let expires = n(commit.queue.updated_at.millis() / 1000 + ATTACHED_PARTS_SECONDS);
        let puts = pieces.into_iter().enumerate().map(|(index, piece)| {
            let item = Item::from([
                (PK.to_owned(), s(redo_pk(id))),
                (SK.to_owned(), s(redo.part_sk(index))),
                (REDO_PART.to_owned(), s(piece)),
                (EXPIRES_AT.to_owned(), expires.clone()),
            ]);
            self.put_item(&self.tables.queues, item)
        });
        futures_util::future::try_join_all(puts).await?;
        Ok(redo)
    }

    /// The changes of the large commit whose redo is attached to `queue_item`, if one is.
    async fn redo_of(&self, id: &QueueId, queue_item: &Item) -> StoreResult<Option<LiveChanges>> {
        let Some(attribute) = get_s(queue_item, REDO) else {
            return Ok(None);
        };
        let json = match RedoParts::named_by(attribute) {
            Some(redo) => self.redo_json(id, &redo).await?,
            None => attribute.to_owned(),
        };
        serde_json::from_str(&json)
            .map(Some)
            .map_err(StoreError::internal)
    }

    /// The JSON of a redo kept in parts, read back whole.
    async fn redo_json(&self, id: &QueueId, redo: &RedoParts) -> StoreResult<String> {
        let parts =
            self.partition_between(&self.tables.queues, &redo_pk(id.as_str()), redo.sk_range());
        let items = query_all(parts).await?;
        if items.len() != redo.parts {
            return Err(StoreError::internal(format!(
                "{} of the {} parts of the redo {} were found",
                items.len(),
                redo.parts,
                redo.prefix
            )));
        }
        Ok(items
            .iter()
            .filter_map(|item| get_s(item, REDO_PART))
            .collect())
    }

    /// Writes the changes of the redo attached to `queue` (as it was committed) in steps, then
    /// removes it and lets its `parts` expire; stops quietly when a newer commit exists
    /// (someone finished it first), or the queue was deleted and created again meanwhile.
    async fn apply_redo(
        &self,
        queue: &Queue,
        changes: &LiveChanges,
        parts: Option<&RedoParts>,
    ) -> StoreResult<()> {
        let id = queue.id.as_str();
        for step in groups(self.live_writes(id, changes)?, STEP_ITEMS) {
            let mut actions = vec![self.redo_still_attached(queue)?];
            actions.extend(step.into_iter().map(|w| w.action));
            match self.transact(actions).await {
                Err(StoreError::Conflict) => return Ok(()),
                other => other?,
            }
        }
        self.remove_redo(queue, VERSION_SK).await?;
        self.remove_redo(queue, QUEUE_SK).await?;
        if let Some(parts) = parts {
            self.expire_redo_parts(id, parts).await;
        }
        Ok(())
    }

    /// Removes the redo from the item `sk` of `queue`'s partition (the queue item or
    /// `#VERSION`) while it is at `queue`'s version (a newer commit replaced it otherwise; the
    /// queue item also keeps its creation time: not a queue created again since).
    async fn remove_redo(&self, queue: &Queue, sk: &str) -> StoreResult<()> {
        let update = self
            .client
            .update_item()
            .table_name(&self.tables.queues)
            .set_key(Some(key(queue.id.as_str(), sk)))
            .update_expression("REMOVE #redo")
            .expression_attribute_names("#redo", REDO)
            .expression_attribute_names("#v", VERSION)
            .expression_attribute_values(":v", n(queue.version));
        let update = if sk == QUEUE_SK {
            update
                .condition_expression("#v = :v AND #created = :created")
                .expression_attribute_names("#created", CREATED_AT)
                .expression_attribute_values(":created", n(queue.created_at.millis()))
        } else {
            update.condition_expression("#v = :v")
        };
        match update.send().await.map_err(map_sdk_error) {
            Ok(_) | Err(StoreError::Conflict) => Ok(()),
            Err(e) => Err(e),
        }
    }

    /// Lets the parts of a redo no longer attached (or never attached) expire a day from now:
    /// a reader that read the queue item just before may still read them meanwhile. A part
    /// whose expiry could not be set keeps the long one it was written with.
    async fn expire_redo_parts(&self, id: &str, redo: &RedoParts) {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs());
        let expires = n(now + FINISHED_PARTS_SECONDS);
        let updates = (0..redo.parts).map(|index| {
            self.client
                .update_item()
                .table_name(&self.tables.queues)
                .set_key(Some(key(&redo_pk(id), &redo.part_sk(index))))
                .update_expression("SET #e = :e")
                .condition_expression("attribute_exists(#pk)")
                .expression_attribute_names("#e", EXPIRES_AT)
                .expression_attribute_names("#pk", PK)
                .expression_attribute_values(":e", expires.clone())
                .send()
        });
        for result in futures_util::future::join_all(updates).await {
            if let Err(e) = result.map_err(map_sdk_error)
                && e != StoreError::Conflict
            {
                tracing::warn!(error = %e, "a finished redo part keeps its long expiry");
            }
        }
    }

    /// Finishes a large commit whose redo is still attached to the queue item, if any.
    async fn finish_large_commit(&self, id: &QueueId) -> StoreResult<()> {
        let queue_key = key(id.as_str(), QUEUE_SK);
        match self.get_item(&self.tables.queues, queue_key).await? {
            Some(item) => self.finish_redo_of(id, item).await,
            None => Ok(()),
        }
    }

    /// Finishes a large commit still attached to queue `id`, if any, then reads the queue.
    async fn finished_then_loaded(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>> {
        self.finish_large_commit(id).await?;
        self.load(id).await
    }

    /// Reads a queue whose partition is larger than one page of a query (1 MB). Each page is
    /// read consistently, the pages together are not: a commit landing between two of them
    /// would give a snapshot of two versions. So the queue item is read before and after the
    /// pages, and the read counts only when its version did not change in between; the queue
    /// item read first (with the redo of a large commit being written, if any) stands for the
    /// queue. `Unavailable` when commits kept landing during every attempt.
    async fn load_in_pages(&self, id: &QueueId) -> StoreResult<Option<QueueSnapshot>> {
        let table = &self.tables.queues;
        let mut retry = 0;
        loop {
            let Some(before) = self.get_item(table, key(id.as_str(), QUEUE_SK)).await? else {
                return Ok(None);
            };
            let mut items = query_all(self.partition_query(table, id.as_str())).await?;
            let after = self.get_item(table, key(id.as_str(), QUEUE_SK)).await?;
            if after.is_some_and(|after| version_of(&after) == version_of(&before)) {
                items.retain(|item| get_s(item, SK) != Some(QUEUE_SK));
                items.push(before);
                return self.snapshot_from(id, items).await;
            }
            backoff(retry, "the queue kept changing while it was read").await?;
            retry += 1;
        }
    }

    /// Builds a snapshot from the items of a queue's partition, with the large commit being
    /// written, if any, applied; `None` without a queue item.
    async fn snapshot_from(
        &self,
        id: &QueueId,
        items: Vec<Item>,
    ) -> StoreResult<Option<QueueSnapshot>> {
        let redo = match redo_named_in(&items) {
            Some(naming) => self.redo_of(id, naming).await?,
            None => None,
        };
        snapshot_from_items(items, redo)
    }

    /// Finishes the large commit whose redo is attached to `queue_item`, if one is.
    async fn finish_redo_of(&self, id: &QueueId, queue_item: Item) -> StoreResult<()> {
        let Some(changes) = self.redo_of(id, &queue_item).await? else {
            return Ok(());
        };
        let parts = get_s(&queue_item, REDO).and_then(RedoParts::named_by);
        let queue: Queue = from_item(queue_item)?;
        self.apply_redo(&queue, &changes, parts.as_ref()).await
    }

    /// A condition: the queue item is `queue` at its version (not a queue created again on the
    /// same branch since) with its redo attached.
    fn redo_still_attached(&self, queue: &Queue) -> StoreResult<TransactWriteItem> {
        let check = ConditionCheck::builder()
            .table_name(&self.tables.queues)
            .set_key(Some(key(queue.id.as_str(), QUEUE_SK)))
            .condition_expression("#v = :v AND #created = :created AND attribute_exists(#redo)")
            .expression_attribute_names("#v", VERSION)
            .expression_attribute_names("#created", CREATED_AT)
            .expression_attribute_names("#redo", REDO)
            .expression_attribute_values(":v", n(queue.version))
            .expression_attribute_values(":created", n(queue.created_at.millis()))
            .build()
            .map_err(StoreError::internal)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// The item writes of a commit's live changes.
    fn live_writes(&self, id: &str, c: &LiveChanges) -> StoreResult<Vec<Write>> {
        let queues = &self.tables.queues;
        let mut live = Vec::with_capacity(c.writes());
        for e in &c.put_entries {
            let item = to_item(e, &[(PK, s(id)), (SK, s(entry_sk(e.pr)))])?;
            live.push(Write::put(queues, item)?);
        }
        for pr in &c.delete_entries {
            live.push(Write::delete(queues, key(id, &entry_sk(*pr)))?);
        }
        for r in &c.put_runs {
            live.push(Write::put(queues, run_item(id, r)?)?);
        }
        for r in &c.delete_runs {
            live.push(Write::delete(queues, key(id, &run_sk(r)))?);
        }
        for x in &c.put_effects {
            let item = to_item(x, &[(PK, s(id)), (SK, s(effect_sk(&x.id)))])?;
            live.push(Write::put(queues, item)?);
        }
        for x in &c.delete_effects {
            live.push(Write::delete(queues, key(id, &effect_sk(x)))?);
        }
        Ok(live)
    }

    /// The writes of a commit's first transaction: the guarded queue put (with the large
    /// commit's `redo` attached, if any) and the uploaded impacted targets it records.
    fn first_writes(&self, commit: &Commit, redo: Option<&RedoParts>) -> StoreResult<Vec<Write>> {
        let id = commit.queue.id.as_str();
        let mut writes = vec![self.guarded_queue_put(commit, redo)?];
        let mut version = Item::from([
            (PK.to_owned(), s(id)),
            (SK.to_owned(), s(VERSION_SK)),
            (VERSION.to_owned(), n(commit.queue.version)),
        ]);
        if let Some(redo) = redo {
            version.insert(REDO.to_owned(), s(redo.attribute()));
        }
        writes.push(Write::put(&self.tables.queues, version)?);
        for (pr, targets) in &commit.uploaded_targets {
            let item = uploaded_targets_item(id, *pr, targets)?;
            writes.push(Write::put(&self.tables.pull_requests, item)?);
        }
        Ok(writes)
    }

    /// The history items of a commit, with their tables, in the order they go into its
    /// transaction while there is room (the rest is written after it, and lost if that
    /// fails): each concluded entry's latest conclusion (what `getSubmittedPullRequest` and
    /// `cancelPullRequest` answer from) first, then finished runs, the conclusion log and
    /// restarts.
    fn history_items(&self, commit: &Commit) -> StoreResult<Vec<TableItem>> {
        let id = commit.queue.id.as_str();
        let (pull_requests, test_runs) = (&self.tables.pull_requests, &self.tables.test_runs);
        let mut latest_of_prs: Vec<(PrNumber, Item)> = Vec::new();
        let mut logs = Vec::new();
        for e in &commit.concluded {
            let [latest, log] = concluded_items(id, e, commit.queue.updated_at)?;
            // A pull request concluded twice by one commit (its entry cancelled for new
            // commits, its resubmission failed at once) has one latest item, the later: a
            // transaction may not write one item twice.
            match latest_of_prs.iter_mut().find(|(pr, _)| *pr == e.pr) {
                Some(kept) => kept.1 = latest,
                None => latest_of_prs.push((e.pr, latest)),
            }
            logs.push((pull_requests.clone(), log));
        }
        let mut history: Vec<TableItem> = latest_of_prs
            .into_iter()
            .map(|(_, latest)| (pull_requests.clone(), latest))
            .collect();
        for r in &commit.finished_runs {
            let item = finished_run_item(id, r, commit.queue.updated_at)?;
            history.push((test_runs.clone(), item));
        }
        history.append(&mut logs);
        for r in &commit.restarts {
            history.push((pull_requests.clone(), restart_item(id, r)?));
        }
        Ok(history)
    }

    /// The queue item's put, conditional on the version the commit was computed from, on the
    /// queue being the one it was computed from (its creation time: a queue deleted and created
    /// again on the same branch starts at version 0 too) and on no large commit being half
    /// applied; `redo` attaches a large commit's changes.
    fn guarded_queue_put(&self, commit: &Commit, redo: Option<&RedoParts>) -> StoreResult<Write> {
        let mut item = queue_item(&commit.queue, commit.active_entries, commit.has_work)?;
        if let Some(redo) = redo {
            item.insert(REDO.to_owned(), s(redo.attribute()));
        }
        let bytes = item_bytes(&item);
        let put = Put::builder()
            .table_name(&self.tables.queues)
            .set_item(Some(item))
            .condition_expression("#v = :v AND #created = :created AND attribute_not_exists(#redo)")
            .expression_attribute_names("#v", VERSION)
            .expression_attribute_names("#created", CREATED_AT)
            .expression_attribute_names("#redo", REDO)
            .expression_attribute_values(":v", n(commit.expected_version))
            .expression_attribute_values(":created", n(commit.queue.created_at.millis()))
            .return_values_on_condition_check_failure(ReturnValuesOnConditionCheckFailure::AllOld)
            .build()
            .map_err(StoreError::internal)?;
        let action = TransactWriteItem::builder().put(put).build();
        Ok(Write { action, bytes })
    }

    fn queue_exists_check(&self, id: &QueueId) -> StoreResult<TransactWriteItem> {
        let check = ConditionCheck::builder()
            .table_name(&self.tables.queues)
            .set_key(Some(key(id.as_str(), QUEUE_SK)))
            .condition_expression("attribute_exists(#pk)")
            .expression_attribute_names("#pk", PK)
            .build()
            .map_err(StoreError::internal)?;
        Ok(TransactWriteItem::builder().condition_check(check).build())
    }

    /// A commit's transaction, whose first action is the guarded queue put. When it fails on
    /// a conflict, a large commit may have been left half applied by a writer that stopped:
    /// it is finished first. The queue item comes with the failed condition (no read), unless
    /// the transaction failed on another action.
    async fn transact_guarded(
        &self,
        id: &QueueId,
        actions: Vec<TransactWriteItem>,
    ) -> StoreResult<()> {
        let Err(TransactionFailed { error, reasons }) = self.transact_write(actions).await else {
            return Ok(());
        };
        if let (StoreError::Conflict, Some(reasons)) = (&error, reasons) {
            match reasons.first().and_then(|r| r.item()) {
                Some(item) => self.finish_redo_of(id, item.clone()).await?,
                None => self.finish_large_commit(id).await?,
            }
        }
        Err(error)
    }

    /// The runs of queue `id` that finished in `window` (the finished-runs index), oldest
    /// first.
    pub(super) fn finished_runs_query(&self, id: &QueueId, window: Window) -> QueryFluentBuilder {
        self.client
            .query()
            .table_name(&self.tables.test_runs)
            .index_name(FINISHED_INDEX)
            .consistent_read(true)
            .key_condition_expression("#pk = :pk AND #f BETWEEN :lo AND :hi")
            .expression_attribute_names("#pk", PK)
            .expression_attribute_names("#f", FINISHED_MS)
            .expression_attribute_values(":pk", s(id.as_str()))
            .expression_attribute_values(":lo", n(window.from.millis()))
            .expression_attribute_values(":hi", n(window.to.millis() - 1))
    }

    /// The PullRequests items of queue `id` whose sort key is in `[lo, hi]`, in key order.
    pub(super) fn pull_requests_between(
        &self,
        id: &QueueId,
        range: (String, String),
    ) -> QueryFluentBuilder {
        self.partition_between(&self.tables.pull_requests, id.as_str(), range)
    }
}

fn queue_item(queue: &Queue, active_entries: u32, has_work: bool) -> StoreResult<Item> {
    let mut keys = vec![
        (PK, s(queue.id.as_str())),
        (SK, s(QUEUE_SK)),
        (ORG_KEY, s(queue.org.as_str())),
        (REPO_KEY, s(queue.repo.key())),
        (ACTIVE_ENTRIES, n(active_entries)),
    ];
    if has_work {
        keys.push((WORK_SHARD, s(WORK_SHARD_VALUE)));
    }
    to_item(queue, &keys)
}

fn run_item(queue_id: &str, run: &TestRun) -> StoreResult<Item> {
    let mut keys = vec![(PK, s(queue_id)), (SK, s(run_sk(&run.id)))];
    if let Some(sha) = &run.sha {
        keys.push((TEST_SHA, s(sha.as_str())));
    }
    to_item(run, &keys)
}

fn finished_run_item(queue_id: &str, run: &TestRun, fallback: Timestamp) -> StoreResult<Item> {
    let finished = run.finished_at.unwrap_or(fallback);
    to_item(
        run,
        &[
            (PK, s(queue_id)),
            (SK, s(run.id.as_str())),
            (FINISHED_MS, n(finished.millis())),
            (EXPIRES_AT, n(expires_at(finished))),
        ],
    )
}

fn restart_item(queue_id: &str, restart: &Restart) -> StoreResult<Item> {
    to_item(
        restart,
        &[
            (PK, s(queue_id)),
            (
                SK,
                s(restart_sk(restart.at, &restart.entry_id, restart.total)),
            ),
            (EXPIRES_AT, n(expires_at(restart.at))),
        ],
    )
}

/// The latest-conclusion item of the PR and the conclusion log item, both kept as long as
/// concluded entries are (SECURITY.md's retention).
fn concluded_items(queue_id: &str, entry: &Entry, fallback: Timestamp) -> StoreResult<[Item; 2]> {
    let at = entry.concluded_at.unwrap_or(fallback);
    let latest = to_item(
        entry,
        &[
            (PK, s(queue_id)),
            (SK, s(latest_pr_sk(entry.pr))),
            (EXPIRES_AT, n(expires_at(at))),
        ],
    )?;
    let log = to_item(
        entry,
        &[
            (PK, s(queue_id)),
            (SK, s(done_sk(at, &entry.id))),
            (EXPIRES_AT, n(expires_at(at))),
        ],
    )?;
    Ok([latest, log])
}

/// An outbox item as this version reads it; `None` for an effect of a kind it does not know
/// (added by a newer version, read during a deployment or after a rollback). That item is left
/// out of the snapshot, so no commit of this version writes it: it waits in the table for the
/// version that wrote it, and the queue goes on meanwhile (deleting the queue deletes it too).
/// Any other item that does not decode is an error.
fn readable_effect(item: Item) -> StoreResult<Option<PendingEffect>> {
    let sk = get_s(&item, SK).unwrap_or_default().to_owned();
    match from_item(item) {
        Ok(effect) => Ok(Some(effect)),
        Err(e) if e.to_string().contains("unknown variant") => {
            let why = "an effect this version cannot read is left for the version that wrote it";
            tracing::warn!(item = %sk, error = %e, "{why}");
            Ok(None)
        }
        Err(e) => Err(e),
    }
}

/// How much earlier than its queue an outbox item is taken as a deleted queue's (of the same
/// repository and branch): more than any clock between two functions is off.
const INCARNATION_MARGIN_MS: i64 = 60_000;

/// An outbox item left by a deleted queue of the same id, which a new queue must not carry out:
/// it was created before the queue (by more than [`INCARNATION_MARGIN_MS`]).
fn of_an_earlier_incarnation(effect: &PendingEffect, queue: &Queue) -> bool {
    let earlier = effect.created_at.millis() + INCARNATION_MARGIN_MS < queue.created_at.millis();
    if earlier {
        tracing::warn!(effect = %effect.id, "an outbox item of a deleted queue is left out");
    }
    earlier
}

/// Builds a snapshot from the items of a queue's partition and the changes of the large
/// commit being written, if any; `None` without a queue item.
fn snapshot_from_items(
    items: Vec<Item>,
    redo: Option<LiveChanges>,
) -> StoreResult<Option<QueueSnapshot>> {
    let mut queue = None;
    let (mut entries, mut runs, mut outbox) = (Vec::new(), Vec::new(), Vec::new());
    for item in items {
        let sk = get_s(&item, SK).unwrap_or_default().to_owned();
        if sk == QUEUE_SK {
            queue = Some(from_item::<Queue>(item)?);
        } else if sk.starts_with(ENTRY_PREFIX) {
            entries.push(from_item(item)?);
        } else if sk.starts_with(RUN_PREFIX) {
            runs.push(from_item(item)?);
        } else if sk.starts_with(EFFECT_PREFIX) {
            outbox.extend(readable_effect(item)?);
        }
    }
    Ok(queue.map(|queue| {
        let outbox = outbox
            .into_iter()
            .filter(|x| !of_an_earlier_incarnation(x, &queue))
            .collect();
        let mut snapshot = QueueSnapshot {
            queue,
            entries,
            runs,
            outbox,
        };
        // A large commit still being written: read it whole.
        if let Some(changes) = &redo {
            changes.apply_to(&mut snapshot);
        }
        snapshot.sort();
        snapshot
    }))
}

/// The actions of a transaction of `writes` and of as much of `history` (in its order) as
/// fits, and the history left for after it.
fn with_history_that_fits(
    mut writes: Vec<Write>,
    history: Vec<TableItem>,
) -> StoreResult<(Vec<TransactWriteItem>, Vec<TableItem>)> {
    let mut bytes = total_bytes(&writes);
    let mut later = Vec::new();
    for (table, item) in history {
        let weight = item_bytes(&item);
        if writes.len() < MAX_TRANSACTION_ITEMS && bytes + weight <= TRANSACTION_BUDGET {
            bytes += weight;
            writes.push(Write::put(&table, item)?);
        } else {
            later.push((table, item));
        }
    }
    Ok((writes.into_iter().map(|w| w.action).collect(), later))
}

/// Whether the items of a queue's partition, read by one query, are all of one version of the
/// queue. A query reads items one after the other, in key order, and each as it is when read
/// (DynamoDB isolates a query from a transaction item by item only): a commit that lands
/// while the query reads could give the entries and effects of one version with the queue
/// item of the next, and a commit computed from that would be accepted. Each commit writes
/// the version twice, in `#VERSION` (read first) and in the queue item: when the two agree,
/// no commit landed between reading the first and the queue item, so what was read in between
/// is of that version. Items read after the queue item (runs) may be newer; a commit
/// computed from them fails its version check, as it should. A queue without `#VERSION` (no
/// commit by code that writes it) has its items taken as read. A `#VERSION` behind the queue
/// item (left by code that commits without writing it) is handled by `load`: two reads in a
/// row of one version of the queue item are whole, whatever `#VERSION` says.
pub(crate) fn read_at_one_version(items: &[Item]) -> bool {
    match (version_in(items, VERSION_SK), version_in(items, QUEUE_SK)) {
        (Some(first), Some(queue)) => first == queue,
        _ => true,
    }
}

/// Queue items as a listing gives them: each read whole, or, when this version cannot read
/// it whole (an item written by a newer version, as after a rollback), by what names it (its
/// id, organisation, repository, branch and creation time) with the rest as a new queue has
/// it. The listing still names that queue, and reading it whole (`load`) fails for it alone:
/// one queue's item does not hide the others (docs/queue-semantics.md §12). An item that does
/// not even name a queue is left out, and logged.
fn listed_queues(items: Vec<Item>) -> Vec<Queue> {
    items.into_iter().filter_map(listed_queue).collect()
}

fn listed_queue(item: Item) -> Option<Queue> {
    let naming: Item = QUEUE_NAMED
        .iter()
        .filter_map(|&name| Some((name.to_owned(), item.get(name)?.clone())))
        .collect();
    let error = match from_item::<Queue>(item) {
        Ok(queue) => return Some(queue),
        Err(e) => e,
    };
    match from_item::<QueueNamed>(naming) {
        Ok(named) => {
            let queue = &named.id;
            tracing::error!(%queue, %error, "a queue item read in part is listed by its name");
            Some(named.into_queue())
        }
        Err(e) => {
            tracing::error!(%error, name_error = %e, "a queue item naming no queue is not listed");
            None
        }
    }
}

/// The attributes of a queue item that name its queue ([`QueueNamed`]'s fields).
const QUEUE_NAMED: [&str; 5] = ["id", "org", "repo", "branch", "created_at"];

/// What names a queue in its item.
#[derive(serde::Deserialize)]
struct QueueNamed {
    id: QueueId,
    org: OrgId,
    repo: mq_core::ids::RepoRef,
    branch: String,
    created_at: Timestamp,
}

impl QueueNamed {
    fn into_queue(self) -> Queue {
        let config = mq_core::settings::QueueConfig::default();
        let state = mq_core::settings::QueueState::Running;
        let mut queue = Queue::new(
            self.org,
            self.repo,
            self.branch,
            config,
            state,
            self.created_at,
        );
        queue.id = self.id;
        queue
    }
}

/// The item that names the redo of a large commit among a queue's items read by one query:
/// the queue item, or else `#VERSION` at the same version (read first, it may name the redo
/// that the queue item read last no longer does: see [`super::large_commit`]).
fn redo_named_in(items: &[Item]) -> Option<&Item> {
    let queue = items
        .iter()
        .find(|item| get_s(item, SK) == Some(QUEUE_SK))?;
    if get_s(queue, REDO).is_some() {
        return Some(queue);
    }
    let copy = items
        .iter()
        .find(|item| get_s(item, SK) == Some(VERSION_SK))?;
    let same_version = version_of(copy).is_some() && version_of(copy) == version_of(queue);
    (same_version && get_s(copy, REDO).is_some()).then_some(copy)
}

/// The version in the item with sort key `sk` among `items`, if there is one.
fn version_in(items: &[Item], sk: &str) -> Option<String> {
    items
        .iter()
        .find(|item| get_s(item, SK) == Some(sk))
        .and_then(|item| version_of(item).map(str::to_owned))
}

/// The version of a queue item.
fn version_of(item: &Item) -> Option<&str> {
    item.get(VERSION)
        .and_then(|v| v.as_n().ok())
        .map(String::as_str)
}

fn take(found: &mut Vec<TableItem>, table: &str, sk: &str) -> Option<Item> {
    let pos = found
        .iter()
        .position(|(t, i)| t == table && get_s(i, SK) == Some(sk))?;
    Some(found.swap_remove(pos).1)
}

/// The item of the impacted targets last uploaded for a pull request of a queue.
fn uploaded_targets_item(id: &str, pr: PrNumber, targets: &UploadedTargets) -> StoreResult<Item> {
    to_item(
        targets,
        &[
            (PK, s(id)),
            (SK, s(targets_sk(pr))),
            (EXPIRES_AT, n(expires_at(targets.uploaded_at))),
        ],
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    fn item(sk: &str, version: u64) -> Item {
        Item::from([(SK.to_owned(), s(sk)), (VERSION.to_owned(), n(version))])
    }

    #[test]
    fn a_read_is_of_one_version_when_both_copies_of_the_version_agree() {
        let entry = Item::from([(SK.to_owned(), s(entry_sk(1)))]);
        let read = |first: u64, queue: u64| {
            read_at_one_version(&[
                item(VERSION_SK, first),
                entry.clone(),
                item(QUEUE_SK, queue),
            ])
        };
        assert!(read(7, 7));
        assert!(!read(7, 8), "a commit landed after #VERSION was read");
        assert!(
            read_at_one_version(&[entry.clone(), item(QUEUE_SK, 3)]),
            "no commit wrote #VERSION yet"
        );
        assert!(read_at_one_version(&[]), "no queue");
    }
}
