//! One event on a queue of 1,000 active entries: single mode (concurrency 8), and parallel
//! mode with 50 distinct impacted targets (concurrency 50). Target: under 1 ms per event.
//!
//! `cargo bench -p mq-core --bench engine`

use criterion::{Criterion, criterion_group, criterion_main};
use mq_core::engine::{Ctx, Effect, EffectOutcome, Event, step};
use mq_core::entry::ImpactedTargets;
use mq_core::git::{PrFacts, RequiredStatuses, RequiredStatusesSource, StatusReport, StatusState};
use mq_core::ids::{OrgId, RepoRef, Sha};
use mq_core::priority::Priority;
use mq_core::run::RunStatus;
use mq_core::settings::{QueueMode, QueueState, SettingsPatch};
use mq_core::snapshot::{Queue, QueueSnapshot};
use mq_core::time::Timestamp;
use std::hint::black_box;

const ENTRIES: u32 = 1_000;
const T0: Timestamp = Timestamp(1_800_000_000_000);

fn facts(pr: u32) -> PrFacts {
    PrFacts {
        title: format!("Change number {pr} of the benchmark"),
        ..PrFacts::sample(pr)
    }
}

/// Applies an event and answers its effects the way a Git host would, instantly.
fn drive(snap: &mut QueueSnapshot, event: Event, seed: &mut u64) {
    let mut events = vec![event];
    while let Some(event) = events.pop() {
        *seed += 1;
        let ctx = Ctx {
            now: T0,
            seed: *seed,
        };
        let t = step(snap, &event, ctx).expect("accepted");
        *snap = t.snapshot;
        for x in t.effects {
            let outcome = match &x.effect {
                Effect::CreateTestBranch { run_id, .. } => EffectOutcome::BranchCreated {
                    sha: Sha::new(format!("{:0>40}", run_id.replace('-', ""))),
                    base_sha: Sha::new("0".repeat(40)),
                    required: RequiredStatuses {
                        contexts: vec!["ci".into()],
                        source: Some(RequiredStatusesSource::RepoProviderBranchProtection),
                    },
                },
                Effect::FetchChecks { .. } => EffectOutcome::Checks {
                    statuses: vec![],
                    check_runs: vec![],
                },
                _ => EffectOutcome::Done,
            };
            events.push(Event::EffectSucceeded {
                effect_id: x.id,
                outcome,
            });
        }
    }
}

/// A queue with 1,000 active entries: `concurrency` groups testing, the rest waiting.
fn queue(mode: QueueMode, concurrency: u32, targets: u32) -> QueueSnapshot {
    let (config, _) = SettingsPatch {
        mode: Some(mode),
        concurrency: Some(concurrency),
        ..Default::default()
    }
    .initial_config()
    .unwrap();
    let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
    let org = OrgId::parse("acme").unwrap();
    let queue = Queue::new(org, repo, "main".into(), config, QueueState::Running, T0);
    let mut snap = QueueSnapshot::new(queue);
    snap.queue.engine.target_head = Some(Sha::new("0".repeat(40)));
    let mut seed = 0;
    for pr in 1..=ENTRIES {
        let submit = Event::Submit {
            pr: facts(pr),
            priority: Priority::default_priority(),
            no_batch: Some(false),
            force: false,
            head_checks_passed: false,
        };
        drive(&mut snap, submit, &mut seed);
        if mode == QueueMode::Parallel {
            let list = ImpactedTargets::List([format!("//target/{}", pr % targets)].into());
            let upload = Event::SetImpactedTargets {
                pr,
                head_sha: facts(pr).head_sha,
                targets: list,
            };
            drive(&mut snap, upload, &mut seed);
        }
    }
    assert_eq!(snap.entries.len(), ENTRIES as usize);
    snap
}

fn status_on(snap: &QueueSnapshot, index: usize, state: StatusState) -> Event {
    let runs: Vec<_> = snap
        .runs
        .iter()
        .filter(|r| r.status == RunStatus::InProgress)
        .collect();
    let run = runs[index.min(runs.len() - 1)];
    Event::StatusReported {
        sha: run.sha.clone().expect("branch created"),
        status: StatusReport {
            context: "ci".into(),
            state,
            url: String::new(),
            description: String::new(),
            updated_at: T0,
        },
    }
}

fn bench_queue(c: &mut Criterion, name: &str, snap: &QueueSnapshot) {
    let ctx = Ctx {
        now: T0.plus_minutes(1),
        seed: 42,
    };
    let mut group = c.benchmark_group(name);
    let events = [
        (
            "front run passes (merge)",
            status_on(snap, 0, StatusState::Success),
        ),
        (
            "run behind passes",
            status_on(snap, 3, StatusState::Success),
        ),
        ("run behind fails", status_on(snap, 3, StatusState::Failure)),
        (
            "submit",
            Event::Submit {
                pr: facts(ENTRIES + 1),
                priority: Priority::default_priority(),
                no_batch: Some(false),
                force: false,
                head_checks_passed: false,
            },
        ),
        ("tick", Event::Tick),
    ];
    // The floor: a step returns a new snapshot, so it clones (and drops) the queue once.
    group.bench_function("clone of the snapshot alone", |b| {
        b.iter(|| black_box(snap).clone())
    });
    for (label, event) in events {
        group.bench_function(label, |b| {
            b.iter(|| step(black_box(snap), black_box(&event), ctx).unwrap())
        });
    }
    group.finish();
}

fn engine(c: &mut Criterion) {
    let single = queue(QueueMode::Single, 8, 1);
    bench_queue(c, "single mode, 1000 entries", &single);
    let parallel = queue(QueueMode::Parallel, 50, 50);
    bench_queue(c, "parallel mode, 1000 entries, 50 targets", &parallel);
}

criterion_group!(benches, engine);
criterion_main!(benches);
