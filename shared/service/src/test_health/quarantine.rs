//! Quarantine and its settings: repository switches and thresholds, per-test overrides, the
//! check CI makes with its failed tests, and ticket links.

use super::ingest::check_url;
use super::lists::unhealthy_view;
use super::{
    caller_scope, parse_test_case_id, test_case_not_found, update_cases, update_read_cases,
};
use crate::app::App;
use crate::error::ServiceError;
use mq_core::health::{
    QuarantineOverride, RepoHealthSettings, TestCase, TestIdentity, Thresholds, test_case_id,
};
use mq_core::ids::{OrgId, RepoRef};
use mq_store::{HealthScope, StoreError};
use mq_wire::Int;
use mq_wire::test_health::{
    CheckQuarantinedRequest, CheckQuarantinedResponse, CheckedTest, LinkTicketRequest,
    OverrideView, SettingsResponse, ThresholdsPatch, UnhealthyTest, UpdateSettingsRequest,
};
use std::collections::HashMap;
use uuid::Uuid;

/// Most overrides or failed tests in one request.
pub const MAX_TESTS_PER_REQUEST: usize = 10_000;

/// Sets repository switches, thresholds and per-test overrides. Everything is validated
/// first: a bad field or an unknown test case changes nothing.
pub async fn update_settings(
    app: &App,
    org: &OrgId,
    req: &UpdateSettingsRequest,
) -> Result<SettingsResponse, ServiceError> {
    let (scope, _) = caller_scope(app, org, &req.org_url_slug, &req.repo).await?;
    let overrides = parse_overrides(req)?;
    let ids: Vec<Uuid> = overrides.keys().copied().collect();
    let known = app.store.get_test_cases(&scope, &ids).await?;
    if let Some(missing) = ids.iter().find(|id| !known.iter().any(|c| c.id == **id)) {
        return Err(test_case_not_found(*missing));
    }
    let saved = save_settings(app, &scope, req).await?;
    let updated = update_cases(app, &scope, &ids, |case, now| {
        case.set_quarantine(overrides[&case.id], now);
        true
    })
    .await?;
    let mut test_overrides: Vec<OverrideView> = updated
        .iter()
        .map(|c| OverrideView {
            test_case_id: c.id.to_string(),
            quarantine: c.quarantine.as_str().to_owned(),
        })
        .collect();
    test_overrides.sort_by(|a, b| a.test_case_id.cmp(&b.test_case_id));
    Ok(SettingsResponse {
        quarantining: saved.quarantining,
        auto_quarantine: saved.auto_quarantine,
        thresholds: saved.thresholds,
        test_overrides,
    })
}

fn parse_overrides(
    req: &UpdateSettingsRequest,
) -> Result<HashMap<Uuid, QuarantineOverride>, ServiceError> {
    if req.test_overrides.len() > MAX_TESTS_PER_REQUEST {
        return Err(ServiceError::invalid(
            "test_overrides may list at most 10000 tests",
        ));
    }
    req.test_overrides
        .iter()
        .enumerate()
        .map(|(i, o)| {
            let id = parse_test_case_id(
                &format!("test_overrides[{i}].test_case_id"),
                &o.test_case_id,
            )?;
            let rule = QuarantineOverride::parse(
                &format!("test_overrides[{i}].quarantine"),
                &o.quarantine,
            )?;
            Ok((id, rule))
        })
        .collect()
}

/// Applies the switches and thresholds with a version check, retrying on a race.
async fn save_settings(
    app: &App,
    scope: &HealthScope,
    req: &UpdateSettingsRequest,
) -> Result<RepoHealthSettings, ServiceError> {
    for attempt in 0..crate::shell::MAX_COMMIT_ATTEMPTS {
        let stored = app.store.health_settings(scope).await?;
        let mut next = stored.clone().unwrap_or_default();
        next.switch(req.quarantining, req.auto_quarantine, app.now());
        if let Some(patch) = &req.thresholds {
            next.thresholds = patched(&next.thresholds, patch)?;
        }
        if stored.as_ref() == Some(&next) {
            return Ok(next);
        }
        next.version = stored.map_or(1, |s| s.version + 1);
        match app.store.put_health_settings(scope, &next).await {
            Ok(()) => return Ok(next),
            Err(StoreError::Conflict) => crate::shell::backoff(attempt).await,
            Err(e) => return Err(e.into()),
        }
    }
    Err(StoreError::Conflict.into())
}

fn patched(current: &Thresholds, p: &ThresholdsPatch) -> Result<Thresholds, ServiceError> {
    let mut t = current.clone();
    if let Some(b) = &p.stable_branches {
        t.stable_branches = b.clone();
    }
    let fields: [(&str, Option<Int>, &mut u32); 11] = [
        (
            "broken_consecutive_failures",
            p.broken_consecutive_failures,
            &mut t.broken_consecutive_failures,
        ),
        (
            "broken_failure_percent",
            p.broken_failure_percent,
            &mut t.broken_failure_percent,
        ),
        ("broken_window", p.broken_window, &mut t.broken_window),
        (
            "broken_min_results",
            p.broken_min_results,
            &mut t.broken_min_results,
        ),
        (
            "broken_recovery_passes",
            p.broken_recovery_passes,
            &mut t.broken_recovery_passes,
        ),
        (
            "flaky_failure_percent",
            p.flaky_failure_percent,
            &mut t.flaky_failure_percent,
        ),
        ("flaky_window", p.flaky_window, &mut t.flaky_window),
        (
            "flaky_min_results",
            p.flaky_min_results,
            &mut t.flaky_min_results,
        ),
        (
            "flaky_recovery_days",
            p.flaky_recovery_days,
            &mut t.flaky_recovery_days,
        ),
        (
            "infra_failure_percent",
            p.infra_failure_percent,
            &mut t.infra_failure_percent,
        ),
        ("infra_min_tests", p.infra_min_tests, &mut t.infra_min_tests),
    ];
    for (name, value, slot) in fields {
        if let Some(v) = value {
            *slot = u32::try_from(v.0).map_err(|_| {
                ServiceError::invalid(format!(
                    "thresholds.{name} must be a positive integer, got {}",
                    v.0
                ))
            })?;
        }
    }
    t.validate()?;
    Ok(t)
}

/// The longest name, class name, file or parent of a failed test (bytes).
pub const MAX_TEST_FIELD_LEN: usize = 4096;
/// The longest variant (bytes), as for uploads.
pub const MAX_VARIANT_LEN: usize = 255;

/// Refuses over-long strings in a check request, naming the field.
fn check_lengths(req: &CheckQuarantinedRequest) -> Result<(), ServiceError> {
    if req.variant.len() > MAX_VARIANT_LEN {
        return Err(ServiceError::invalid(format!(
            "variant must be at most {MAX_VARIANT_LEN} bytes"
        )));
    }
    for (i, t) in req.failed_tests.iter().enumerate() {
        let fields = [
            ("name", &t.name),
            ("classname", &t.classname),
            ("file", &t.file),
            ("parent", &t.parent),
        ];
        if let Some((field, _)) = fields.iter().find(|(_, v)| v.len() > MAX_TEST_FIELD_LEN) {
            return Err(ServiceError::invalid(format!(
                "failed_tests[{i}].{field} must be at most {MAX_TEST_FIELD_LEN} bytes"
            )));
        }
    }
    Ok(())
}

/// Which of CI's failed tests are quarantined: when all are, CI may pass. A failed test named
/// without a variant, when the request gives none, is also looked for in every variant the
/// repository's uploads have named: if exactly one of them has it, that one is matched, and
/// the answer says which.
pub async fn check(
    app: &App,
    org: &OrgId,
    req: &CheckQuarantinedRequest,
) -> Result<CheckQuarantinedResponse, ServiceError> {
    let (scope, repo) = caller_scope(app, org, &req.org_url_slug, &req.repo).await?;
    if req.failed_tests.len() > MAX_TESTS_PER_REQUEST {
        return Err(ServiceError::invalid(
            "failed_tests may list at most 10000 tests",
        ));
    }
    check_lengths(req)?;
    let asked = asked_tests(req, &repo)?;
    let ids: Vec<Uuid> = asked.iter().map(|a| a.id).collect();
    let (settings, found) = app.store.settings_and_test_cases(&scope, &ids).await?;
    let settings = settings.unwrap_or_default();
    let mut known: HashMap<Uuid, TestCase> = found.into_iter().map(|c| (c.id, c)).collect();
    let others = other_variants(&asked, &known, &settings, &repo);
    if !others.is_empty() {
        let ids: Vec<Uuid> = others.iter().map(|(_, id)| *id).collect();
        let found = app.store.get_test_cases(&scope, &ids).await?;
        known.extend(found.into_iter().map(|c| (c.id, c)));
    }
    let mut in_variants: HashMap<usize, Vec<Uuid>> = HashMap::new();
    for (i, id) in others {
        in_variants.entry(i).or_default().push(id);
    }
    let tests: Vec<CheckedTest> = asked
        .into_iter()
        .enumerate()
        .map(|(i, a)| {
            let candidates = in_variants.get(&i).into_iter().flatten();
            let matches: Vec<&TestCase> = candidates.filter_map(|id| known.get(id)).collect();
            checked(a, known.get(&ids[i]), &matches, &settings, &req.variant)
        })
        .collect();
    let quarantined = tests.iter().filter(|t| t.quarantined).count() as u32;
    Ok(CheckQuarantinedResponse {
        all_quarantined: !tests.is_empty() && quarantined as usize == tests.len(),
        quarantined_count: quarantined,
        unquarantined_count: tests.len() as u32 - quarantined,
        tests,
    })
}

/// Most test cases looked up in other variants for one check.
const MAX_VARIANT_LOOKUPS: usize = 10_000;

/// A failed test of the request: its id, its identity, and whether it was named (not given
/// by id).
struct Asked {
    id: Uuid,
    identity: TestIdentity,
    by_name: bool,
}

fn asked_tests(req: &CheckQuarantinedRequest, repo: &RepoRef) -> Result<Vec<Asked>, ServiceError> {
    let mut asked = Vec::with_capacity(req.failed_tests.len());
    for (i, t) in req.failed_tests.iter().enumerate() {
        let identity = TestIdentity {
            file: t.file.clone(),
            classname: t.classname.clone(),
            parent: t.parent.clone(),
            name: t.name.clone(),
            variant: req.variant.clone(),
        }
        .escaped();
        if identity.longest_part() > MAX_TEST_FIELD_LEN {
            return Err(ServiceError::invalid(format!(
                "failed_tests[{i}] has a name, classname, file or parent longer than \
                 {MAX_TEST_FIELD_LEN} bytes once its control characters are escaped"
            )));
        }
        let (id, by_name) = match &t.test_case_id {
            Some(id) => {
                let field = format!("failed_tests[{i}].test_case_id");
                (parse_test_case_id(&field, id)?, false)
            }
            None if t.name.is_empty() => {
                return Err(ServiceError::invalid(format!(
                    "failed_tests[{i}] needs a name (or a test_case_id)"
                )));
            }
            None => (test_case_id(repo, &identity), true),
        };
        asked.push(Asked {
            id,
            identity,
            by_name,
        });
    }
    Ok(asked)
}

/// For each named test not found as asked, when the request gives no variant: its ids in
/// the repository's known variants, as (index of the test, id).
fn other_variants(
    asked: &[Asked],
    known: &HashMap<Uuid, TestCase>,
    settings: &RepoHealthSettings,
    repo: &RepoRef,
) -> Vec<(usize, Uuid)> {
    let mut others = Vec::new();
    let unmatched = asked
        .iter()
        .enumerate()
        .filter(|(_, a)| a.by_name && a.identity.variant.is_empty() && !known.contains_key(&a.id));
    for (i, a) in unmatched {
        for variant in &settings.variants {
            if others.len() == MAX_VARIANT_LOOKUPS {
                return others;
            }
            let identity = TestIdentity {
                variant: variant.clone(),
                ..a.identity.clone()
            };
            others.push((i, test_case_id(repo, &identity)));
        }
    }
    others
}

/// A variant that named a test this long before another named it last no longer counts for
/// it: CI stopped running it under that variant (renamed, or left the matrix).
const VARIANT_GONE_AFTER_MS: i64 = 7 * 86_400_000;

/// The test cases of a test in other variants that CI still runs it under: those named
/// within [`VARIANT_GONE_AFTER_MS`] of the latest of them.
fn still_named<'a>(in_other_variants: &[&'a TestCase]) -> Vec<&'a TestCase> {
    let Some(latest) = in_other_variants.iter().map(|c| c.last_seen).max() else {
        return Vec::new();
    };
    in_other_variants
        .iter()
        .copied()
        .filter(|c| latest.millis_since(c.last_seen) < VARIANT_GONE_AFTER_MS)
        .collect()
}

/// The answer for one failed test: the test case found as asked, else the one variant that
/// still has it, else why none was matched.
fn checked(
    asked: Asked,
    found: Option<&TestCase>,
    in_other_variants: &[&TestCase],
    settings: &RepoHealthSettings,
    variant: &str,
) -> CheckedTest {
    let in_other_variants = still_named(in_other_variants);
    let (case, note) = match (found, in_other_variants.as_slice()) {
        (Some(case), _) => (Some(case), None),
        (None, [only]) => (Some(*only), None),
        (None, []) if variant.is_empty() => (None, Some("no upload has named this test".into())),
        (None, []) => (
            None,
            Some(format!(
                "no upload with variant `{variant}` has named this test"
            )),
        ),
        (None, several) => {
            let names: Vec<String> = several
                .iter()
                .map(|c| format!("`{}`", c.identity.variant))
                .collect();
            let note = format!(
                "uploads of several variants named this test ({}): send `variant` to say which",
                names.join(", ")
            );
            (None, Some(note))
        }
    };
    let identity = case.map_or(asked.identity, |c| c.identity.clone());
    CheckedTest {
        test_case_id: case.map_or(asked.id, |c| c.id).to_string(),
        name: identity.name,
        classname: identity.classname,
        file: identity.file,
        parent: identity.parent,
        variant: identity.variant,
        known: case.is_some(),
        quarantined: case.is_some_and(|c| c.quarantined(settings)),
        note,
    }
}

/// Links a ticket to a test case (an empty URL removes it); answers the test as listed.
pub async fn link_ticket(
    app: &App,
    org: &OrgId,
    req: &LinkTicketRequest,
) -> Result<UnhealthyTest, ServiceError> {
    let (scope, repo) = caller_scope(app, org, &req.org_url_slug, &req.repo).await?;
    let id = parse_test_case_id("test_case_id", &req.test_case_id)?;
    let url = Some(req.ticket_url.trim().to_owned()).filter(|u| !u.is_empty());
    if let Some(u) = &url {
        check_url("ticket_url", u)?;
    }
    // The settings (for the answer) are read with the test case.
    let (settings, read) = app.store.settings_and_test_cases(&scope, &[id]).await?;
    let updated = update_read_cases(app, &scope, read, |case, _| {
        case.ticket_url = url.clone();
        true
    })
    .await?;
    let case = updated
        .into_iter()
        .next()
        .ok_or_else(|| test_case_not_found(id))?;
    let settings = settings.unwrap_or_default();
    Ok(unhealthy_view(&repo, &case, &settings, app.now()))
}
