//! CODEOWNERS matching.
//!
//! - `codeowners_adversarial`: 100 rules of `*a*a*a…` (10 to 50 wildcards; exponential for a
//!   backtracking matcher) against paths of `a`s from 256 to 4,096 bytes (the longest `file`
//!   a report may give): the time per path grows linearly with its length.
//! - `codeowners_monorepo`: a 2 MB CODEOWNERS of 45,000 directory rules and 1,000 wildcard
//!   rules, compiled once per upload, then one path matched.
//! - `codeowners_most_patterned`: the most wildcard rules accepted (20,000), compiled, then
//!   one path matched.
//!
//! `cargo bench -p mq-core --bench codeowners`

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use mq_core::health::codeowners::{CodeOwners, MAX_PATTERNED_RULES};
use std::hint::black_box;
use std::time::Duration;

fn adversarial() -> CodeOwners {
    let text: String = (0..100)
        .map(|i| {
            let last = char::from(b'b' + (i % 20) as u8);
            format!("{}{last} @team-{i}\n", "*a".repeat(10 + i % 41))
        })
        .collect();
    CodeOwners::parse(&text).expect("accepted")
}

fn monorepo() -> String {
    let dirs = (0..45_000).map(|i| {
        format!(
            "/services/team-{}/module-{i}/ @acme/team-{}\n",
            i % 300,
            i % 300
        )
    });
    let wildcards = (0..1_000).map(|i| match i % 2 {
        0 => format!("*.gen-{i}.ts @acme/frontend\n"),
        _ => format!("**/fixtures-{i}/**/*.json @acme/qa-{}\n", i % 50),
    });
    dirs.chain(wildcards).collect()
}

fn most_patterned() -> String {
    (0..MAX_PATTERNED_RULES)
        .map(|i| match i % 2 {
            0 => format!("*.ext{i} @acme/team-{}\n", i % 300),
            _ => format!("docs/area-{i}/* @acme/docs\n"),
        })
        .collect()
}

fn adversarial_paths(c: &mut Criterion) {
    let owners = adversarial();
    let mut group = c.benchmark_group("codeowners_adversarial");
    for len in [256, 512, 1024, 2048, 4096] {
        let path = "a".repeat(len);
        group.throughput(Throughput::Bytes(len as u64));
        group.bench_with_input(BenchmarkId::new("path_bytes", len), &path, |b, path| {
            b.iter(|| black_box(owners.owners_of(black_box(path))))
        });
    }
    group.finish();
}

fn large_files(c: &mut Criterion) {
    let path = "services/team-7/module-4207/src/deep/dir/file_test.rs";
    for (name, text) in [
        ("codeowners_monorepo", monorepo()),
        ("codeowners_most_patterned", most_patterned()),
    ] {
        let parsed = CodeOwners::parse(&text).expect("accepted");
        let mut group = c.benchmark_group(name);
        group.sample_size(10);
        group.bench_function("parse", |b| {
            b.iter(|| black_box(CodeOwners::parse(black_box(&text)).expect("accepted")))
        });
        group.bench_function("match_one_path", |b| {
            b.iter(|| black_box(parsed.owners_of(black_box(path))))
        });
        group.finish();
    }
}

criterion_group! {
    name = benches;
    config = Criterion::default()
        .warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    targets = adversarial_paths, large_files
}
criterion_main!(benches);
