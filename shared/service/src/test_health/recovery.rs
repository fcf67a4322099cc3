//! Time-based recovery: a FLAKY test with no new evidence for the repository's recovery days
//! becomes HEALTHY. The scheduled tick calls [`recover`]; due tests are found with a `Query` on
//! the recovery index, never a scan.

use super::{scope_of, settings, update_cases};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::health::RepoHealthSettings;
use mq_core::time::Timestamp;
use mq_store::HealthScope;
use std::collections::HashMap;
use std::time::Instant;

/// Test cases looked at per round.
const BATCH: usize = 100;
/// Rounds per call; the next tick goes on where this one stopped.
const MAX_ROUNDS: usize = 50;

/// Re-judges every FLAKY test case due at `now`, in rounds begun until `until` (the rest is
/// the next call's). Returns how many changed status.
pub async fn recover(app: &App, now: Timestamp, until: Instant) -> Result<usize, ServiceError> {
    let mut recovered = 0;
    let mut settings_of: HashMap<HealthScope, RepoHealthSettings> = HashMap::new();
    for _ in 0..MAX_ROUNDS {
        if Instant::now() >= until {
            tracing::info!("test health recovery left to the next tick: its time is up");
            break;
        }
        let due = app.store.due_for_recovery(now, BATCH).await?;
        if due.is_empty() {
            break;
        }
        let mut by_scope: HashMap<HealthScope, Vec<uuid::Uuid>> = HashMap::new();
        for case in &due {
            by_scope
                .entry(scope_of(&case.org, &case.repo))
                .or_default()
                .push(case.id);
        }
        for (scope, ids) in by_scope {
            if !settings_of.contains_key(&scope) {
                let s = settings(app, &scope).await?;
                settings_of.insert(scope.clone(), s);
            }
            let thresholds = &settings_of[&scope].thresholds;
            let changed = update_cases(app, &scope, &ids, |case, _| {
                let due = case.flaky_until.is_some_and(|u| u <= now);
                if due {
                    case.reclassify(thresholds, now);
                }
                due
            })
            .await?;
            recovered += changed.iter().filter(|c| !c.is_unhealthy()).count();
        }
    }
    Ok(recovered)
}
