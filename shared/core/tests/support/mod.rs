//! A test driver for the engine: it plays the Git host and CI deterministically, feeds every
//! effect's result back, and checks the engine's promises after every step.
//!
//! Commits are modelled by their content: the sequence of changes applied since the start
//! (pull request numbers; pushes outside the queue are numbers from [`OUTSIDE`] up). A test
//! branch is its base's content plus the pull requests merged into it. CI is answered by the
//! test (`pass`, `fail`, or an oracle over the content), and every content that passed is
//! remembered: a merge must move the target to a content that passed, or to a prefix of one
//! (docs/queue-semantics.md §5's invariant).
//!
//! Commits also have an identity beyond their content: the merge commits they hold, one id
//! each ([`Host::links`]). A test branch's merge commit for a stamped pull request has the
//! id of its stamp (the real hosts write it the same way every time); anything else is a new
//! commit. Under `merge_commit` the target is fast-forwarded to the tested commit, so the
//! target's merge commits must be a prefix of the tested commit's: a merge that is not a
//! fast-forward is refused, as GitHub would, and recorded as a broken promise.

#![allow(dead_code)]

use mq_core::engine::{
    BranchPr, Ctx, Effect, EffectOutcome, Event, MergeRefusal, PendingEffect, Transition,
    invariants, step, step_owned,
};
use mq_core::entry::{Entry, EntryState, ImpactedTargets};
use mq_core::git::{
    Mergeability, PrFacts, PrState, RequiredStatuses, RequiredStatusesSource, StatusReport,
    StatusState,
};
use mq_core::ids::{OrgId, PrNumber, RepoRef, Sha};
use mq_core::priority::Priority;
use mq_core::run::{RunStatus, TestRun};
use mq_core::settings::{MergeMethod, QueueConfig, QueueMode, QueueState, SettingsPatch};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use mq_core::{DomainError, ErrorCode};
use std::collections::{BTreeMap, BTreeSet, VecDeque};

/// Changes pushed outside the queue are numbered from here.
pub const OUTSIDE: u32 = 1_000_000;

pub const T0: Timestamp = Timestamp(1_800_000_000_000);

/// The status CI reports, required by the repository's branch protection.
pub const CI: &str = "ci";

/// A commit's content: the changes applied since the start, in order.
pub type Content = Vec<u32>;

pub fn sha_of(content: &[u32]) -> Sha {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &c in content {
        for b in c.to_le_bytes() {
            h ^= u64::from(b);
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Sha::new(format!("{h:016x}{:024x}", content.len()))
}

/// The id of a commit named by its merge commits (see the module docs).
fn sha_of_links(links: &[String]) -> Sha {
    let mut h: u64 = 0x8422_2325_cbf2_9ce4;
    for b in links.join("|").bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    Sha::new(format!("{h:016x}{:024x}", links.len() + (1 << 40)))
}

/// The Git host: the target branch, test branches, pull request heads.
#[derive(Debug, Clone)]
pub struct Host {
    pub target: Content,
    /// The target branch's commit.
    pub head: Sha,
    /// The merge commits each commit holds, oldest first.
    pub links: BTreeMap<Sha, Vec<String>>,
    /// Commits written that no other write reproduces (squash, rebase, unstamped merges).
    fresh: u64,
    pub commits: BTreeMap<Sha, Content>,
    pub branches: BTreeMap<String, Sha>,
    /// Current head sha of each pull request.
    pub heads: BTreeMap<PrNumber, Sha>,
    /// Pull requests that conflict when merged into a test branch.
    pub conflicts: BTreeSet<PrNumber>,
    /// Pull requests closed on the host (a merge of them is refused).
    pub closed: BTreeSet<PrNumber>,
    /// Pull requests merged outside the queue (the host refuses to merge them again).
    pub merged_outside: BTreeSet<PrNumber>,
    /// What the repository requires (branch protection).
    pub required: RequiredStatuses,
    /// Every target content the queue produced, in order.
    pub target_history: Vec<Content>,
    pub pushes_outside: u32,
    /// Test branches with a draft pull request open.
    pub test_prs: BTreeSet<String>,
    /// Pull requests closed after their changes landed as commits of the queue's own
    /// (`squash`, `rebase`), in order.
    pub closed_after_landing: Vec<PrNumber>,
}

impl Host {
    fn new() -> Self {
        let mut commits = BTreeMap::new();
        commits.insert(sha_of(&[]), Vec::new());
        Self {
            target: Vec::new(),
            head: sha_of(&[]),
            links: BTreeMap::from([(sha_of(&[]), Vec::new())]),
            fresh: 0,
            commits,
            branches: BTreeMap::new(),
            heads: BTreeMap::new(),
            conflicts: BTreeSet::new(),
            closed: BTreeSet::new(),
            merged_outside: BTreeSet::new(),
            required: RequiredStatuses {
                contexts: vec![CI.to_owned()],
                source: Some(RequiredStatusesSource::RepoProviderBranchProtection),
            },
            target_history: Vec::new(),
            pushes_outside: 0,
            test_prs: BTreeSet::new(),
            closed_after_landing: Vec::new(),
        }
    }

    pub fn target_sha(&self) -> Sha {
        self.head.clone()
    }

    fn commit(&mut self, content: Content) -> Sha {
        let sha = sha_of(&content);
        self.commits.insert(sha.clone(), content);
        sha
    }

    /// A commit holding `links`, with `content`.
    fn commit_links(&mut self, content: Content, links: Vec<String>) -> Sha {
        let sha = sha_of_links(&links);
        self.commits.insert(sha.clone(), content);
        self.links.insert(sha.clone(), links);
        sha
    }

    /// A push of `change` to the target outside the queue.
    pub fn push(&mut self, change: u32) -> Sha {
        self.target.push(change);
        let mut links = self.links_of(&self.head);
        links.push(format!("push{change}"));
        self.head = self.commit_links(self.target.clone(), links);
        self.head.clone()
    }

    fn links_of(&self, sha: &Sha) -> Vec<String> {
        self.links.get(sha).cloned().unwrap_or_default()
    }

    /// The id of the merge commit a host writes for `pr`: its stamp's, or a new one.
    fn link(&mut self, pr: &BranchPr, reproducible: bool) -> String {
        match (&pr.stamp, reproducible) {
            (Some(stamp), true) => format!("{}@{}/{}", pr.pr, stamp.run_id, stamp.at.0),
            _ => {
                self.fresh += 1;
                format!("{}#{}", pr.pr, self.fresh)
            }
        }
    }
}

/// The driver.
pub struct Harness {
    pub snap: QueueSnapshot,
    pub now: Timestamp,
    seed: u64,
    pub host: Host,
    /// Execute effects as soon as they are emitted.
    pub auto_execute: bool,
    /// Effects emitted and not yet executed (when `auto_execute` is off).
    pub pending: VecDeque<PendingEffect>,
    /// Every effect emitted, in order, with the queue state when it was emitted.
    pub emitted: Vec<(PendingEffect, QueueState)>,
    /// The rules each run's merge is checked by, by run id: those of the mode the queue was in
    /// when the run's test branch was first requested (a mode switch lets the groups of the
    /// old mode finish and merge, docs/queue-semantics.md §8).
    pub built_in_mode: BTreeMap<String, QueueMode>,
    /// Impacted targets CI computed for each head sha (see [`Harness::upload_targets`]).
    pub targets_by_head: BTreeMap<Sha, ImpactedTargets>,
    /// Contents whose required statuses passed.
    pub passed: BTreeSet<Content>,
    /// Pull requests whose own head passed CI (for direct merge).
    pub green_heads: BTreeSet<PrNumber>,
    /// Pull requests whose mergeability the host is still computing.
    pub computing_mergeability: BTreeSet<PrNumber>,
    /// Broken promises found so far.
    pub violations: Vec<String>,
    /// Every entry that concluded, in order.
    pub concluded: Vec<Entry>,
    /// Every run that left the snapshot.
    pub finished_runs: Vec<TestRun>,
    /// Round-trip the snapshot through JSON after each step, as the store would.
    pub persist: bool,
    head_versions: BTreeMap<PrNumber, u32>,
}

impl Harness {
    pub fn new(config: QueueConfig) -> Self {
        let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
        let queue = Queue::new(
            OrgId::parse("acme").unwrap(),
            repo,
            "main".to_owned(),
            config,
            QueueState::Running,
            T0,
        );
        let mut snap = QueueSnapshot::new(queue);
        let host = Host::new();
        snap.queue.engine.target_head = Some(host.target_sha());
        Self {
            snap,
            now: T0,
            seed: 1,
            host,
            auto_execute: true,
            pending: VecDeque::new(),
            emitted: Vec::new(),
            built_in_mode: BTreeMap::new(),
            targets_by_head: BTreeMap::new(),
            passed: BTreeSet::new(),
            green_heads: BTreeSet::new(),
            computing_mergeability: BTreeSet::new(),
            violations: Vec::new(),
            concluded: Vec::new(),
            finished_runs: Vec::new(),
            persist: false,
            head_versions: BTreeMap::new(),
        }
    }

    pub fn with(patch: SettingsPatch) -> Self {
        let (config, _) = patch.initial_config().unwrap();
        Self::new(config)
    }

    // ---- events -------------------------------------------------------------------------

    /// Applies an event; on success executes its effects (when `auto_execute`).
    pub fn apply(&mut self, event: Event) -> Result<Transition, DomainError> {
        self.seed += 1;
        let ctx = Ctx {
            now: self.now,
            seed: self.seed,
        };
        let before_state = self.snap.queue.state;
        let t = step(&self.snap, &event, ctx);
        // The owned step agrees, and hands a refused snapshot back as it was.
        match (&t, step_owned(self.snap.clone(), &event, ctx)) {
            (Ok(a), Ok(b)) => assert_eq!(a, &b, "step_owned agrees with step"),
            (Err(a), Err((s, b))) => {
                assert_eq!(a, &b);
                assert_eq!(*s, self.snap, "a refusal changes nothing");
            }
            (a, b) => panic!("step and step_owned disagree: {a:?} / {b:?}"),
        }
        let t = t?;
        self.check_step(&t, before_state);
        self.snap = if self.persist {
            let json = serde_json::to_string(&t.snapshot).unwrap();
            serde_json::from_str(&json).unwrap()
        } else {
            t.snapshot.clone()
        };
        self.concluded.extend(t.concluded.iter().cloned());
        self.finished_runs.extend(t.finished_runs.iter().cloned());
        for x in &t.effects {
            self.emitted.push((x.clone(), self.snap.queue.state));
            if let Effect::CreateTestBranch { run_id, .. } = &x.effect {
                self.built_in_mode
                    .entry(run_id.clone())
                    .or_insert(self.snap.queue.config.mode);
            }
            self.pending.push_back(x.clone());
        }
        if self.auto_execute {
            self.execute_all();
        }
        Ok(t)
    }

    /// Applies an event that must be accepted.
    pub fn ok(&mut self, event: Event) -> Transition {
        match self.apply(event) {
            Ok(t) => t,
            Err(e) => panic!("refused: {e:?}"),
        }
    }

    /// The pull request as the host describes it: merged once the target holds it.
    pub fn facts(&self, pr: PrNumber) -> PrFacts {
        let merged = self.host.target.contains(&pr);
        PrFacts {
            head_sha: self.head(pr),
            base_branch: self.snap.queue.branch.clone(),
            state: if merged {
                PrState::Merged
            } else {
                PrState::Open
            },
            mergeability: if self.computing_mergeability.contains(&pr) {
                Mergeability::InProgress
            } else {
                Mergeability::Mergeable
            },
            ..PrFacts::sample(pr)
        }
    }

    pub fn head(&self, pr: PrNumber) -> Sha {
        let v = self.head_versions.get(&pr).copied().unwrap_or(0);
        Sha::new(format!("{:032x}{pr:08x}", v + 1))
    }

    pub fn submit(&mut self, pr: PrNumber) -> Transition {
        self.submit_with(pr, Priority::default_priority(), false)
    }

    pub fn submit_with(&mut self, pr: PrNumber, priority: Priority, no_batch: bool) -> Transition {
        let facts = self.facts(pr);
        self.host.heads.insert(pr, facts.head_sha.clone());
        self.ok(Event::Submit {
            pr: facts,
            priority,
            no_batch: Some(no_batch),
            force: false,
            head_checks_passed: self.green_heads.contains(&pr),
        })
    }

    pub fn submit_facts(&mut self, facts: PrFacts) -> Result<Transition, DomainError> {
        self.host.heads.insert(facts.number, facts.head_sha.clone());
        let green = self.green_heads.contains(&facts.number);
        self.apply(Event::Submit {
            pr: facts,
            priority: Priority::default_priority(),
            no_batch: Some(false),
            force: false,
            head_checks_passed: green,
        })
    }

    /// Submits `pr` as based on the target's head (what a direct merge needs, with its own
    /// statuses green: [`Self::green_heads`]).
    pub fn submit_up_to_date(&mut self, pr: PrNumber) -> Transition {
        let mut facts = self.facts(pr);
        facts.based_on_target_head = true;
        self.submit_facts(facts).unwrap()
    }

    /// New commits on a pull request: the host's head moves and a webhook says so.
    pub fn push_to_pr(&mut self, pr: PrNumber) -> Transition {
        *self.head_versions.entry(pr).or_default() += 1;
        let facts = self.facts(pr);
        self.host.heads.insert(pr, facts.head_sha.clone());
        self.ok(Event::PrUpdated { pr: facts })
    }

    pub fn set_targets(&mut self, pr: PrNumber, targets: &[&str]) -> Transition {
        let list = ImpactedTargets::List(targets.iter().map(|s| (*s).to_owned()).collect());
        self.ok(Event::SetImpactedTargets {
            pr,
            head_sha: self.head(pr),
            targets: list,
        })
    }

    /// `setImpactedTargets` for the pull request's current head, as CI would: targets
    /// depend on the head only, so the first upload for a head fixes them and later uploads
    /// for it repeat them (`targets` is then ignored).
    pub fn upload_targets(
        &mut self,
        pr: PrNumber,
        targets: ImpactedTargets,
    ) -> Result<Transition, DomainError> {
        let head_sha = self.head(pr);
        let targets = self
            .targets_by_head
            .entry(head_sha.clone())
            .or_insert(targets)
            .clone();
        self.apply(Event::SetImpactedTargets {
            pr,
            head_sha,
            targets,
        })
    }

    pub fn update(&mut self, patch: SettingsPatch) -> Transition {
        self.ok(Event::UpdateSettings { patch })
    }

    pub fn advance_minutes(&mut self, minutes: u32) {
        self.now = self.now.plus_minutes(minutes);
    }

    pub fn tick(&mut self) -> Transition {
        self.ok(Event::Tick)
    }

    /// A push to the target outside the queue.
    pub fn push_outside(&mut self) -> Transition {
        self.host.pushes_outside += 1;
        let sha = self.host.push(OUTSIDE + self.host.pushes_outside);
        self.ok(Event::TargetMoved { sha })
    }

    // ---- CI -----------------------------------------------------------------------------

    /// Reports the required status on a run's branch tip.
    pub fn report(&mut self, run_id: &str, pass: bool) -> Transition {
        let sha = self
            .run(run_id)
            .and_then(|r| r.sha.clone())
            .unwrap_or_else(|| panic!("run {run_id} has no branch"));
        if pass && let Some(content) = self.host.commits.get(&sha) {
            self.passed.insert(content.clone());
        }
        let status = StatusReport {
            context: CI.to_owned(),
            state: if pass {
                StatusState::Success
            } else {
                StatusState::Failure
            },
            url: format!("https://ci.example/{run_id}"),
            description: String::new(),
            updated_at: self.now,
        };
        self.ok(Event::StatusReported { sha, status })
    }

    pub fn pass(&mut self, run_id: &str) -> Transition {
        self.report(run_id, true)
    }

    pub fn fail(&mut self, run_id: &str) -> Transition {
        self.report(run_id, false)
    }

    /// The run currently testing `pr`.
    pub fn run_of(&self, pr: PrNumber) -> String {
        self.entry(pr)
            .and_then(|e| e.current_run.clone())
            .unwrap_or_else(|| panic!("PR {pr} is not testing: {:?}", self.entry(pr)))
    }

    pub fn pass_pr(&mut self, pr: PrNumber) -> Transition {
        let id = self.run_of(pr);
        self.pass(&id)
    }

    pub fn fail_pr(&mut self, pr: PrNumber) -> Transition {
        let id = self.run_of(pr);
        self.fail(&id)
    }

    /// Answers every run in progress whose branch exists, front first: `oracle` says
    /// whether a content passes.
    pub fn answer_all(&mut self, oracle: impl FnMut(&Content) -> bool) -> usize {
        self.answer_at_most(usize::MAX, oracle)
    }

    /// [`Self::answer_all`], but stops after `max` answers (a queue that tests without end
    /// fails its test instead of hanging it).
    pub fn answer_at_most(
        &mut self,
        max: usize,
        mut oracle: impl FnMut(&Content) -> bool,
    ) -> usize {
        let mut answered = 0;
        while answered < max {
            let next = self.snap.runs.iter().find_map(|r| {
                (r.status == RunStatus::InProgress && r.sha.is_some())
                    .then(|| (r.id.clone(), r.sha.clone().unwrap()))
            });
            let Some((id, sha)) = next else { break };
            let content = self.host.commits.get(&sha).cloned().unwrap_or_default();
            let pass = oracle(&content);
            self.report(&id, pass);
            answered += 1;
        }
        answered
    }

    // ---- effects ------------------------------------------------------------------------

    /// Executes every pending effect, feeding results back, until none is left.
    pub fn execute_all(&mut self) {
        while self.execute_next() {}
    }

    /// Executes at most `n` pending effects, oldest first, feeding results back.
    pub fn execute_some(&mut self, n: usize) {
        for _ in 0..n {
            if !self.execute_next() {
                return;
            }
        }
    }

    /// Executes the oldest pending effect still in the outbox; false when none is pending.
    fn execute_next(&mut self) -> bool {
        let Some(x) = self.pending.pop_front() else {
            return false;
        };
        if self.snap.outbox.iter().any(|o| o.id == x.id) {
            let outcome = self.execute(&x.effect);
            let _ = self.apply(Event::EffectSucceeded {
                effect_id: x.id.clone(),
                outcome,
            });
        }
        true
    }

    /// Executes one effect on the simulated host.
    pub fn execute(&mut self, effect: &Effect) -> EffectOutcome {
        match effect {
            Effect::CreateTestBranch {
                branch, base, prs, ..
            } => {
                let base_sha = base.clone().unwrap_or_else(|| self.host.target_sha());
                let mut content = self
                    .host
                    .commits
                    .get(&base_sha)
                    .cloned()
                    .unwrap_or_default();
                let mut links = self.host.links_of(&base_sha);
                for p in prs {
                    if self.host.conflicts.contains(&p.pr) {
                        return EffectOutcome::BranchConflict { pr: p.pr };
                    }
                    content.push(p.pr);
                    links.push(self.host.link(p, true));
                }
                let sha = self.host.commit_links(content, links);
                self.host.branches.insert(branch.clone(), sha.clone());
                EffectOutcome::BranchCreated {
                    sha,
                    base_sha,
                    required: self.host.required.clone(),
                }
            }
            Effect::CancelRun { branch, .. } | Effect::DeleteBranch { branch } => {
                self.host.branches.remove(branch);
                EffectOutcome::Done
            }
            Effect::Merge {
                run_id,
                prs,
                method,
                expected_target_sha,
                tested_sha,
            } => {
                assert!(
                    tested_sha.is_some() || prs.len() == 1,
                    "a merge with no tested commit lands one pull request at a time: {prs:?}"
                );
                let actual = self.host.target_sha();
                if let Some(expected) = expected_target_sha
                    && *expected != actual
                {
                    return EffectOutcome::MergeRefused {
                        refusal: MergeRefusal::TargetMoved { actual },
                        tip: None,
                    };
                }
                for p in prs {
                    if self.host.heads.get(&p.pr) != Some(&p.head_sha) {
                        return EffectOutcome::MergeRefused {
                            refusal: MergeRefusal::PrChanged { pr: p.pr },
                            tip: None,
                        };
                    }
                    if self.host.closed.contains(&p.pr) {
                        return EffectOutcome::MergeRefused {
                            refusal: MergeRefusal::PrClosed { pr: p.pr },
                            tip: None,
                        };
                    }
                    if self.host.merged_outside.contains(&p.pr) {
                        return EffectOutcome::MergeRefused {
                            refusal: MergeRefusal::PrMerged { pr: p.pr },
                            tip: None,
                        };
                    }
                }
                let mut next = self.host.target.clone();
                next.extend(prs.iter().map(|p| p.pr));
                let mode = run_id
                    .as_ref()
                    .and_then(|id| self.built_in_mode.get(id).copied())
                    .unwrap_or(self.snap.queue.config.mode);
                if run_id.is_none() || mode == QueueMode::Single {
                    // A direct merge (no run) is checked the same way in both modes.
                    self.check_merge(run_id.is_some(), &next, tested_sha.as_ref(), prs[0].pr);
                } else {
                    self.check_lane_merge(run_id.as_deref(), prs, tested_sha.is_none());
                }
                let head = match self.new_head(*method, prs, tested_sha.as_ref(), &next) {
                    Ok(head) => head,
                    Err(refusal) => return EffectOutcome::MergeRefused { refusal, tip: None },
                };
                self.host.head = head.clone();
                self.host.target = next.clone();
                self.host.target_history.push(next);
                EffectOutcome::Merged {
                    target_sha: head,
                    tip: None,
                }
            }
            Effect::OpenTestPullRequest { branch, .. } => {
                if self.host.branches.contains_key(branch) {
                    self.host.test_prs.insert(branch.clone());
                }
                EffectOutcome::Done
            }
            Effect::CloseTestPullRequest { branch, .. } => {
                self.host.test_prs.remove(branch);
                EffectOutcome::Done
            }
            Effect::RefreshPullRequest { pr } => EffectOutcome::PullRequest {
                pr: self.facts(*pr),
            },
            Effect::FetchChecks { .. } => EffectOutcome::Checks {
                statuses: vec![],
                check_runs: vec![],
            },
            Effect::CloseLandedPullRequest { pr } => {
                self.host.closed_after_landing.push(pr.pr);
                EffectOutcome::Done
            }
            Effect::PostComment { .. } | Effect::SetStatusCheck { .. } => EffectOutcome::Done,
        }
    }

    /// The target's commit after a merge: under `merge_commit` with a tested commit, that
    /// commit (a fast-forward, refused when it does not hold the target's merge commits);
    /// otherwise new commits on the target, one per pull request, reproducible only for
    /// stamped merge commits.
    fn new_head(
        &mut self,
        method: MergeMethod,
        prs: &[BranchPr],
        tested_sha: Option<&Sha>,
        next: &Content,
    ) -> Result<Sha, MergeRefusal> {
        let mut links = self.host.links_of(&self.host.head);
        if let (MergeMethod::MergeCommit, Some(tested)) = (method, tested_sha) {
            let tested_links = self.host.links_of(tested);
            if !tested_links.starts_with(&links) {
                let detail =
                    format!("{tested:?} ({tested_links:?}) does not hold the target {links:?}");
                self.violations.push(format!(
                    "merge_commit merge that is not a fast-forward: {detail}"
                ));
                return Err(MergeRefusal::Rejected { pr: None, detail });
            }
            return Ok(tested.clone());
        }
        if let Some(tested) = tested_sha
            && self.host.commits.get(tested) != Some(next)
        {
            // The hosts walk the tested commit back through one merge per pull request,
            // last first, down to the target's tree (githost `tested_chain`).
            let detail = format!("{tested:?} is not the target with {prs:?} merged in order");
            self.violations
                .push(format!("{method:?} merge the host refuses: {detail}"));
            return Err(MergeRefusal::Rejected { pr: None, detail });
        }
        let reproducible = method == MergeMethod::MergeCommit;
        for p in prs {
            links.push(self.host.link(p, reproducible));
        }
        Ok(self.host.commit_links(next.clone(), links))
    }

    // ---- promises -----------------------------------------------------------------------

    fn check_merge(&mut self, tested: bool, next: &Content, tested_sha: Option<&Sha>, pr: u32) {
        if tested {
            let green = self
                .passed
                .iter()
                .any(|p| p.len() >= next.len() && p[..next.len()] == next[..]);
            if !green {
                self.violations
                    .push(format!("target moved to untested content {next:?}"));
            }
            if let Some(t) = tested_sha {
                let tree = self.host.commits.get(t);
                if tree != Some(next) {
                    self.violations.push(format!(
                        "merge result {next:?} differs from the tested commit {tree:?}"
                    ));
                }
            }
        } else if !self.green_heads.contains(&pr) {
            self.violations
                .push(format!("direct merge of PR {pr} whose head is not green"));
        }
    }

    /// Parallel mode: the merged pull requests are tested by a run that passed. Every other
    /// change of that run is already in the target, and the target afterwards holds the
    /// run's changes in the tested order, except for pairs with disjoint impacted targets:
    /// those commute, so the target's tree is still the tested one as far as the run goes.
    /// (Changes the run lacks are allowed: parallel merges carry no tested sha then.)
    /// `one_by_one`: a merge with no tested commit, which lands the run's pull requests one at
    /// a time, in the order its branch holds them.
    fn check_lane_merge(
        &mut self,
        run_id: Option<&str>,
        prs: &[mq_core::engine::BranchPr],
        one_by_one: bool,
    ) {
        let tested = run_id
            .and_then(|id| self.run(id))
            .and_then(|r| r.sha.as_ref())
            .and_then(|sha| self.host.commits.get(sha))
            .cloned();
        let merged: Content = prs.iter().map(|p| p.pr).collect();
        let problem = match &tested {
            None => Some("no tested content".to_owned()),
            Some(c) if !self.passed.contains(c) => Some("that content did not pass".to_owned()),
            Some(c) => self.lane_order_problem(c, &merged, one_by_one),
        };
        if let Some(problem) = problem {
            self.violations.push(format!(
                "merged {merged:?} without a passing run that tested them ({tested:?}): {problem}"
            ));
        }
    }

    fn lane_order_problem(
        &self,
        content: &Content,
        merged: &Content,
        one_by_one: bool,
    ) -> Option<String> {
        // A change the tested content lacks landed after its branch was built: it must be of
        // another lane than every merged pull request.
        for &landed in self.host.target.iter().filter(|c| !content.contains(c)) {
            if let Some(&m) = merged
                .iter()
                .find(|&&m| self.targets_of(m).intersects(&self.targets_of(landed)))
            {
                return Some(format!(
                    "{landed} landed after the run was built, untested with {m}, and they intersect"
                ));
            }
        }
        let mut after = self.host.target.clone();
        after.extend(merged);
        let at = |c: u32| after.iter().position(|&x| x == c);
        let last_merged = content.iter().rposition(|c| merged.contains(c));
        for (i, &x) in content.iter().enumerate() {
            let Some(ax) = at(x) else {
                if one_by_one && last_merged.is_some_and(|last| i > last) {
                    continue; // merged by the next merges
                }
                return Some(format!(
                    "{x} was tested but is neither merged nor in the target"
                ));
            };
            for &y in &content[i + 1..] {
                let Some(ay) = at(y) else { continue };
                if ay < ax && self.targets_of(x).intersects(&self.targets_of(y)) {
                    return Some(format!(
                        "{y} was tested after {x} but lands before it, and they intersect"
                    ));
                }
            }
        }
        None
    }

    /// A pull request's impacted targets for its head (active or latest concluded entry);
    /// `ALL` without an upload, as the engine assumes.
    pub fn targets_of(&self, pr: PrNumber) -> ImpactedTargets {
        let entry = self
            .entry(pr)
            .or_else(|| self.concluded.iter().rev().find(|e| e.pr == pr));
        entry
            .filter(|e| e.has_impacted_targets())
            .and_then(|e| e.impacted.as_ref())
            .map_or(ImpactedTargets::All, |t| t.targets.clone())
    }

    fn check_step(&mut self, t: &Transition, before: QueueState) {
        let s = &t.snapshot;
        self.violations.extend(invariants::violations(s));
        let paused = before == QueueState::Paused && s.queue.state == QueueState::Paused;
        if paused {
            for x in t.effects.iter().filter(|x| x.created_at == self.now) {
                let starts_or_merges = match &x.effect {
                    Effect::Merge { .. } => true,
                    Effect::CreateTestBranch { run_id, .. } => {
                        !self.snap.runs.iter().any(|r| &r.id == run_id)
                    }
                    _ => false,
                };
                if starts_or_merges {
                    self.violations
                        .push(format!("paused queue emitted {:?}", x.effect));
                }
            }
        }
    }

    /// Asserts that no promise was broken.
    pub fn assert_clean(&self) {
        assert!(self.violations.is_empty(), "{:#?}", self.violations);
    }

    // ---- reading ------------------------------------------------------------------------

    pub fn entry(&self, pr: PrNumber) -> Option<&Entry> {
        self.snap.entry_for_pr(pr)
    }

    pub fn state(&self, pr: PrNumber) -> EntryState {
        if let Some(e) = self.entry(pr) {
            return e.state;
        }
        self.concluded
            .iter()
            .rev()
            .find(|e| e.pr == pr)
            .map(|e| e.state)
            .unwrap_or_else(|| panic!("PR {pr} was never submitted"))
    }

    pub fn conclusion(&self, pr: PrNumber) -> String {
        self.concluded
            .iter()
            .rev()
            .find(|e| e.pr == pr)
            .and_then(|e| e.conclusion.clone())
            .map(|c| c.reason)
            .unwrap_or_default()
    }

    /// The sentence `pr`'s conclusion tells it.
    pub fn conclusion_detail(&self, pr: PrNumber) -> String {
        self.concluded
            .iter()
            .rev()
            .find(|e| e.pr == pr)
            .and_then(|e| e.conclusion.clone())
            .map(|c| c.detail)
            .unwrap_or_default()
    }

    /// The last comment emitted for `pr`.
    pub fn last_comment(&self, pr: PrNumber) -> String {
        self.emitted_where(|e| matches!(e, Effect::PostComment { pr: p, .. } if *p == pr))
            .last()
            .map(|e| match e {
                Effect::PostComment { body, .. } => body.clone(),
                _ => unreachable!(),
            })
            .unwrap_or_default()
    }

    pub fn run(&self, id: &str) -> Option<&TestRun> {
        self.snap.runs.iter().find(|r| r.id == id)
    }

    /// The content a run's branch was created with.
    pub fn content_of(&self, run_id: &str) -> Content {
        let sha = self.run(run_id).and_then(|r| r.sha.clone()).unwrap();
        self.host.commits[&sha].clone()
    }

    pub fn merged_prs(&self) -> Vec<PrNumber> {
        self.concluded
            .iter()
            .filter(|e| e.state == EntryState::Merged)
            .map(|e| e.pr)
            .collect()
    }

    pub fn testing_runs(&self) -> Vec<&TestRun> {
        self.snap
            .runs
            .iter()
            .filter(|r| r.status == RunStatus::InProgress)
            .collect()
    }

    /// Effects of a kind emitted so far.
    pub fn emitted_where(&self, f: impl Fn(&Effect) -> bool) -> Vec<&Effect> {
        self.emitted
            .iter()
            .map(|(x, _)| &x.effect)
            .filter(|e| f(e))
            .collect()
    }

    /// How many pull requests each merge emitted so far carried, in order.
    pub fn merge_sizes(&self) -> Vec<usize> {
        self.emitted_where(|e| matches!(e, Effect::Merge { .. }))
            .into_iter()
            .map(|e| match e {
                Effect::Merge { prs, .. } => prs.len(),
                _ => unreachable!(),
            })
            .collect()
    }

    /// The Git host says `pr` is a draft now (`true`), or ready for review again.
    pub fn set_draft(&mut self, pr: PrNumber, draft: bool) {
        let mut facts = self.facts(pr);
        facts.draft = draft;
        self.ok(Event::PrUpdated { pr: facts });
    }

    pub fn code(err: &DomainError) -> ErrorCode {
        err.code
    }
}
