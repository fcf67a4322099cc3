//! The status rules as scenarios: one per rule and per recovery path.

use super::classify::{StatusKind, Verdict, classify};
use super::history::{Outcome, ResultRecord};
use super::identity::TestIdentity;
use super::quarantine::QuarantineOverride;
use super::settings::{RepoHealthSettings, Thresholds};
use super::test_case::{NewResult, TestCase};
use crate::ids::{OrgId, RepoRef};
use crate::time::Timestamp;
use StatusKind::*;

const HOUR: i64 = 3_600_000;
const DAY: i64 = 24 * HOUR;
const START: i64 = 1_795_000_000_000;

/// A test's results told in order: `main("c1", "P")`, one result per letter: `P` passed,
/// `F` failed, `R` failed then passed on a retry. Each result is an hour after the previous.
struct Story {
    thresholds: Thresholds,
    history: Vec<ResultRecord>,
    now: i64,
    uploads: u32,
}

fn story() -> Story {
    Story {
        thresholds: Thresholds::default(),
        history: Vec::new(),
        now: START,
        uploads: 0,
    }
}

impl Story {
    fn results(mut self, stable: bool, commit: &str, outcomes: &str) -> Self {
        for c in outcomes.chars() {
            let outcome = match c {
                'P' => Outcome::Passed,
                'F' => Outcome::Failed,
                'R' => Outcome::PassedOnRetry,
                'A' => Outcome::FailedAfterPass,
                _ => panic!("outcome letters are P, F, R, A"),
            };
            self.now += HOUR;
            self.uploads += 1;
            self.history.push(ResultRecord {
                commit: commit.to_owned(),
                stable,
                outcome,
                at: Timestamp(self.now),
                upload: format!("u{}", self.uploads),
            });
        }
        self
    }

    /// Results on `main`, each on its own commit (`c1`, `c2`, ...) unless one letter.
    fn main(self, outcomes: &str) -> Self {
        outcomes.chars().fold(self, |s, c| {
            let commit = format!("m{}", s.uploads + 1);
            s.results(true, &commit, &c.to_string())
        })
    }

    fn main_commit(self, commit: &str, outcomes: &str) -> Self {
        self.results(true, commit, outcomes)
    }

    fn branch(self, commit: &str, outcomes: &str) -> Self {
        self.results(false, commit, outcomes)
    }

    fn days_later(mut self, days: i64) -> Self {
        self.now += days * DAY;
        self
    }

    fn with(mut self, change: impl FnOnce(&mut Thresholds)) -> Self {
        change(&mut self.thresholds);
        self
    }

    fn verdict(&self) -> Verdict {
        classify(&self.history, &self.thresholds, Timestamp(self.now))
    }

    fn status(&self) -> StatusKind {
        self.verdict().kind
    }

    fn reason(&self) -> String {
        self.verdict().reason
    }

    /// Asserts that the reason mentions `part`.
    fn assert_reason_contains(&self, part: &str) {
        let reason = self.reason();
        assert!(reason.contains(part), "{reason}");
    }

    /// Asserts that the reason begins with `start`.
    fn assert_reason_starts_with(&self, start: &str) {
        let reason = self.reason();
        assert!(reason.starts_with(start), "{reason}");
    }
}

#[test]
fn a_test_that_only_passes_is_healthy() {
    let s = story().main("PPPPP").branch("f1", "PP");
    assert_eq!(s.status(), Healthy);
    s.assert_reason_starts_with("no rule fired");
}

#[test]
fn three_failures_in_a_row_on_main_are_broken() {
    let s = story().main("PPPFF");
    assert_eq!(s.status(), Healthy, "two failures could still be a flake");
    let s = s.main("F");
    assert_eq!(s.status(), Broken);
    assert_eq!(
        s.reason(),
        "broken: the last 3 results on stable branches failed (commits m4, m5, m6)"
    );
}

#[test]
fn eighty_percent_of_the_last_twenty_failing_is_broken() {
    let s = story().main("FFPFF");
    assert_eq!(s.status(), Broken);
    s.assert_reason_contains("4 of the last 5 results");
    assert_eq!(
        story().main("FFPF").status(),
        Healthy,
        "fewer than 5 results"
    );
}

#[test]
fn failures_on_feature_branches_never_make_a_test_broken() {
    let s = story()
        .main("PP")
        .branch("f1", "F")
        .branch("f2", "F")
        .branch("f3", "F");
    assert_eq!(s.status(), Healthy);
}

#[test]
fn a_commit_that_passed_and_failed_is_flaky_on_any_branch() {
    let s = story().main("PP").branch("f1", "F").branch("f1", "P");
    assert_eq!(s.status(), Flaky);
    assert_eq!(s.reason(), "flaky: commit f1 passed and failed across runs");
}

#[test]
fn passing_on_a_retry_is_flaky() {
    let s = story().branch("f1", "R");
    assert_eq!(s.status(), Flaky);
    assert_eq!(
        s.reason(),
        "flaky: commit f1 failed, then passed on a retry"
    );
}

#[test]
fn a_failure_between_passes_on_main_is_flaky() {
    let s = story().main("PPFP");
    assert_eq!(s.status(), Flaky);
    s.assert_reason_contains("between passes (commit m3");
    assert_eq!(
        story().main("PPPF").status(),
        Healthy,
        "not yet between passes"
    );
}

#[test]
fn intermittent_failures_of_twenty_percent_over_ten_runs_are_flaky() {
    // Failures at the edges are not between passes, but they are 2 of 10.
    let s = story().main("FPPPPPPPPF");
    assert_eq!(s.status(), Flaky);
    s.assert_reason_contains("2 of the last 10 results");
    assert_eq!(story().main("FPPPPPPPF").status(), Healthy, "only 9 runs");
}

#[test]
fn broken_is_more_severe_than_flaky() {
    // One intermittent failure in four results (25%): a streak of 4 is a breakage.
    let s = story().main("PFPPFFF");
    assert_eq!(
        s.status(),
        Flaky,
        "3 in a row is within this test's bad luck"
    );
    let s = s.main("F");
    assert_eq!(s.status(), Broken);
    s.assert_reason_starts_with("broken: the last 4 results");
}

#[test]
fn a_test_failing_nearly_half_its_runs_needs_six_failures_in_a_row() {
    // 5 intermittent failures in 11 results (45%): 0.45^6 < 1%.
    let s = story().main("PFPFPFPFPFP").main("FFFFF");
    assert_eq!(s.status(), Flaky);
    assert_eq!(s.main("F").status(), Broken);
}

#[test]
fn broken_recovers_after_two_passes_in_a_row() {
    let s = story().main("PPFFF").main("P");
    assert_eq!(s.status(), Broken, "one pass is not enough");
    let s = s.main("P");
    assert_eq!(s.status(), Healthy);
    s.assert_reason_starts_with("recovered: 2 passes on stable branches");
}

#[test]
fn a_broken_test_that_passes_between_failures_is_flaky() {
    let s = story().main("PPFFFPF");
    assert_eq!(s.status(), Broken, "one pass is not enough");
    // A second pass, after a failure: it passes and fails, it is not broken.
    let s = s.main("P");
    assert_eq!(s.status(), Flaky);
}

#[test]
fn a_breakage_that_was_fixed_is_not_flakiness() {
    let s = story().main("PPPFFFFPPPPPP");
    assert_eq!(s.status(), Healthy);
    let s = s.main("FFF");
    assert_eq!(
        s.status(),
        Broken,
        "a new breakage counts again after recovery"
    );
}

#[test]
fn flaky_recovers_after_seven_days_without_new_evidence() {
    let s = story().main("PFP").days_later(6);
    assert_eq!(s.status(), Flaky);
    let until = s.verdict().flaky_until.unwrap();
    assert_eq!(until.millis(), START + 3 * HOUR + 7 * DAY);
    let s = s.days_later(1);
    assert_eq!(s.status(), Healthy);
    s.assert_reason_starts_with("recovered: no new flaky evidence for 7 days");
}

#[test]
fn a_pass_then_a_fail_in_one_run_is_flaky() {
    let s = story().branch("f1", "A");
    assert_eq!(s.status(), Flaky);
    s.assert_reason_contains("passed, then failed on a retry");
}

/// A commit of main failed and passed again; later runs of that same commit keep passing.
/// They are no new evidence: the test recovers 7 days after the last.
#[test]
fn passes_of_a_commit_that_flaked_are_no_new_evidence() {
    let s = story().main_commit("m1", "FP");
    assert_eq!(s.status(), Flaky);
    let s = s.days_later(6).main_commit("m1", "P").days_later(2);
    assert_eq!(s.status(), Healthy, "{}", s.reason());
    let s = s.main_commit("m1", "F");
    assert_eq!(
        s.status(),
        Flaky,
        "a new failure of the commit is new evidence"
    );
}

#[test]
fn new_evidence_restarts_the_seven_days() {
    let s = story()
        .main("PFP")
        .days_later(6)
        .branch("f9", "R")
        .days_later(3);
    assert_eq!(s.status(), Flaky);
    s.assert_reason_contains("f9");
}

#[test]
fn thresholds_are_settings() {
    let s = story()
        .with(|t| t.broken_consecutive_failures = 2)
        .main("PFF");
    assert_eq!(s.status(), Broken);
    let s = story()
        .with(|t| t.stable_branches = vec!["trunk".into()])
        .main_commit("x", "F");
    assert!(
        s.history.iter().all(|r| r.stable),
        "stability is decided at upload"
    );
    let s = story()
        .with(|t| t.flaky_recovery_days = 1)
        .main("PFP")
        .days_later(2);
    assert_eq!(s.status(), Healthy);
}

fn test_case() -> TestCase {
    let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
    let identity = TestIdentity {
        name: "test_add".into(),
        ..TestIdentity::default()
    };
    let id = super::identity::test_case_id(&repo, &identity);
    TestCase::new(
        id,
        OrgId::parse("acme").unwrap(),
        repo,
        identity,
        Timestamp(START),
    )
}

fn result(upload: &str, commit: &str, outcome: Outcome, at: i64, pr: Option<u32>) -> NewResult {
    NewResult {
        record: ResultRecord {
            commit: commit.into(),
            stable: pr.is_none(),
            outcome,
            at: Timestamp(at),
            upload: upload.into(),
        },
        pr,
    }
}

#[test]
fn a_test_case_records_each_upload_once_and_dates_status_changes() {
    let t = Thresholds::default();
    let mut tc = test_case();
    let first = result("u1", "c1", Outcome::Failed, START + HOUR, Some(7));
    assert!(tc.record(first.clone(), &t, Timestamp(START + HOUR)));
    assert!(
        !tc.record(first, &t, Timestamp(START + 2 * HOUR)),
        "same upload again"
    );
    assert_eq!(tc.history.len(), 1);
    let retry = result("u2", "c1", Outcome::Passed, START + 3 * HOUR, Some(7));
    tc.record(retry, &t, Timestamp(START + 3 * HOUR));
    assert_eq!(tc.status.kind, Flaky);
    assert_eq!(tc.status.since, Timestamp(START + 3 * HOUR));
    let again = result(
        "u3",
        "c2",
        Outcome::PassedOnRetry,
        START + 4 * HOUR,
        Some(8),
    );
    tc.record(again, &t, Timestamp(START + 4 * HOUR));
    assert_eq!(
        tc.status.since,
        Timestamp(START + 3 * HOUR),
        "still FLAKY: same since"
    );
    assert_eq!(
        tc.pull_requests_impacted_last_7d(Timestamp(START + 5 * HOUR)),
        2
    );
}

#[test]
fn quarantine_candidacy_follows_override_and_status() {
    let t = Thresholds::default();
    let mut tc = test_case();
    assert!(!tc.is_quarantine_candidate());
    tc.record(
        result("u1", "c1", Outcome::PassedOnRetry, START, None),
        &t,
        Timestamp(START),
    );
    assert!(tc.is_quarantine_candidate() && tc.needs_auto_quarantine());
    assert_eq!(tc.quarantine_since, Some(Timestamp(START)));
    tc.set_quarantine(QuarantineOverride::NeverQuarantine, Timestamp(START + HOUR));
    assert!(!tc.is_quarantine_candidate());
    tc.set_quarantine(
        QuarantineOverride::AlwaysQuarantine,
        Timestamp(START + 2 * HOUR),
    );
    assert_eq!(tc.quarantine_since, Some(Timestamp(START + 2 * HOUR)));
    assert!(!tc.needs_auto_quarantine());
}

#[test]
fn a_test_is_forgotten_ninety_days_after_its_last_result_unless_a_user_set_its_override() {
    let t = Thresholds::default();
    let mut tc = test_case();
    tc.record(
        result("u1", "c1", Outcome::Failed, START, None),
        &t,
        Timestamp(START),
    );
    tc.record(
        result("u2", "c2", Outcome::Failed, START + DAY, None),
        &t,
        Timestamp(START + DAY),
    );
    assert_eq!(tc.forgotten_after(), Some(Timestamp(START + 91 * DAY)));
    tc.set_quarantine(
        QuarantineOverride::AlwaysQuarantine,
        Timestamp(START + 2 * DAY),
    );
    assert_eq!(
        tc.forgotten_after(),
        None,
        "kept while quarantined by a user"
    );
    tc.set_quarantine(
        QuarantineOverride::NeverQuarantine,
        Timestamp(START + 3 * DAY),
    );
    assert_eq!(tc.forgotten_after(), None, "kept while kept out by a user");
    tc.set_quarantine(QuarantineOverride::Auto, Timestamp(START + 4 * DAY));
    assert_eq!(tc.forgotten_after(), Some(Timestamp(START + 91 * DAY)));
}

#[test]
fn a_test_is_quarantined_from_when_its_repository_let_it_be() {
    let t = Thresholds::default();
    let mut tc = test_case();
    tc.record(
        result("u1", "c1", Outcome::PassedOnRetry, START, None),
        &t,
        Timestamp(START),
    );
    let mut settings = RepoHealthSettings::default();
    assert_eq!(tc.quarantined_at(&settings), None, "quarantining is off");
    settings.switch(Some(true), None, Timestamp(START + HOUR));
    assert_eq!(tc.quarantined_at(&settings), None, "auto-quarantine is off");
    settings.switch(None, Some(true), Timestamp(START + 2 * HOUR));
    assert_eq!(
        tc.quarantined_at(&settings),
        Some(Timestamp(START + 2 * HOUR)),
        "FLAKY since START, quarantined once auto-quarantine was on"
    );
    settings.switch(Some(true), Some(true), Timestamp(START + 3 * HOUR));
    assert_eq!(
        tc.quarantined_at(&settings),
        Some(Timestamp(START + 2 * HOUR)),
        "turning on what is on changes nothing"
    );
    let mut healthy = test_case();
    healthy.set_quarantine(
        QuarantineOverride::AlwaysQuarantine,
        Timestamp(START + 4 * HOUR),
    );
    settings.switch(None, Some(false), Timestamp(START + 5 * HOUR));
    assert_eq!(tc.quarantined_at(&settings), None, "auto-quarantine is off");
    assert_eq!(
        healthy.quarantined_at(&settings),
        Some(Timestamp(START + 4 * HOUR)),
        "an override needs no auto-quarantine"
    );
    settings.switch(Some(false), None, Timestamp(START + 6 * HOUR));
    assert_eq!(healthy.quarantined_at(&settings), None);
    settings.switch(Some(true), None, Timestamp(START + 7 * HOUR));
    assert_eq!(
        healthy.quarantined_at(&settings),
        Some(Timestamp(START + 7 * HOUR)),
        "quarantining turned on again"
    );
}

#[test]
fn history_is_bounded() {
    let t = Thresholds::default();
    let mut tc = test_case();
    for i in 0..100 {
        let r = result(
            &format!("u{i}"),
            &format!("c{i}"),
            Outcome::Passed,
            START + i,
            None,
        );
        tc.record(r, &t, Timestamp(START + i));
    }
    assert_eq!(tc.history.len(), super::settings::HISTORY_CAPACITY);
    assert_eq!(tc.history.last().unwrap().upload, "u99");
}

/// Records `outcomes` (one upload each, an hour apart from `at`) on `main` or on pull request
/// 7's branch; returns the time of the last.
fn record_all(tc: &mut TestCase, outcomes: &str, on_main: bool, mut at: i64) -> i64 {
    let t = Thresholds::default();
    for c in outcomes.chars() {
        at += HOUR;
        let outcome = match c {
            'P' => Outcome::Passed,
            'F' => Outcome::Failed,
            _ => Outcome::PassedOnRetry,
        };
        let upload = format!("u{at}");
        let pr = (!on_main).then_some(7);
        tc.record(result(&upload, &upload, outcome, at, pr), &t, Timestamp(at));
    }
    at
}

#[test]
fn a_broken_test_stays_broken_after_its_failures_leave_the_kept_results() {
    let mut tc = test_case();
    let at = record_all(&mut tc, "FFF", true, START);
    assert_eq!(tc.status.kind, Broken);
    // Pull requests fail too while main is broken: the failures on main leave the kept
    // results, and nothing has passed.
    let at = record_all(&mut tc, &"F".repeat(45), false, at);
    assert!(tc.history.iter().all(|r| !r.stable));
    assert_eq!(tc.status.kind, Broken, "{}", tc.status.reason);
    assert!(
        tc.status.reason.starts_with("broken"),
        "{}",
        tc.status.reason
    );
    let at = record_all(&mut tc, "P", true, at);
    assert_eq!(tc.status.kind, Broken, "one pass is not a recovery");
    record_all(&mut tc, "P", true, at);
    assert_eq!(tc.status.kind, Healthy, "{}", tc.status.reason);
}

#[test]
fn a_flaky_test_stays_flaky_for_its_recovery_days_after_its_evidence_leaves() {
    let t = Thresholds::default();
    let mut tc = test_case();
    let at = record_all(&mut tc, "R", true, START);
    assert_eq!(tc.status.kind, Flaky);
    let until = tc.flaky_until.expect("a recovery time");
    assert_eq!(until, Timestamp(at + 7 * DAY));
    // A busy day: the retry leaves the kept results within hours.
    record_all(&mut tc, &"P".repeat(45), true, at);
    assert_eq!(tc.status.kind, Flaky, "{}", tc.status.reason);
    assert_eq!(tc.flaky_until, Some(until));
    tc.reclassify(&t, Timestamp(until.0 + HOUR));
    assert_eq!(tc.status.kind, Healthy, "{}", tc.status.reason);
}
