//! The service and its vocabulary stay apart from HTTP and AWS: `mq-service` and `mq-wire`
//! reach no HTTP framework, HTTP client, Lambda runtime or AWS SDK crate, directly or through
//! the crates they use (the storage and Git host ports compile without their DynamoDB and
//! GitHub adapters). docs/architecture.md draws the crates and what each may import.

use std::process::Command;

/// Crate names (or their prefixes) that belong to the HTTP edge or to the AWS wiring.
const EDGE_AND_AWS: [&str; 9] = [
    "aws-",
    "lambda_http",
    "lambda_runtime",
    "http",
    "http-body",
    "hyper",
    "reqwest",
    "tower",
    "multer",
];

/// The packages `package` compiles with (normal dependencies, this platform), by name.
fn dependencies_of(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let out = Command::new(cargo)
        .args([
            "tree", "--edges", "normal", "--prefix", "none", "--format", "{p}",
        ])
        .args(["--package", package])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo tree runs");
    assert!(
        out.status.success(),
        "cargo tree failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("cargo tree prints UTF-8");
    let mut names: Vec<String> = text
        .lines()
        .filter_map(|line| line.split_whitespace().next())
        .map(str::to_owned)
        .collect();
    names.sort();
    names.dedup();
    names
}

fn forbidden(name: &str) -> bool {
    EDGE_AND_AWS
        .iter()
        .any(|f| name == *f || (f.ends_with('-') && name.starts_with(f)))
}

#[test]
fn the_service_and_the_wire_types_reach_no_http_or_aws_crate() {
    for package in ["mq-service", "mq-wire"] {
        let deps = dependencies_of(package);
        assert!(deps.len() > 5, "{package} has dependencies: {deps:?}");
        let reached: Vec<&String> = deps.iter().filter(|d| forbidden(d)).collect();
        assert!(reached.is_empty(), "{package} reaches {reached:?}");
    }
}

#[test]
fn the_check_sees_the_crates_the_edge_and_the_wiring_use() {
    let edge = dependencies_of("mq-http");
    assert!(edge.iter().any(|d| d == "lambda_http"), "{edge:?}");
    let wiring = dependencies_of("mq-lambda");
    assert!(wiring.iter().any(|d| d == "aws-sdk-dynamodb"), "{wiring:?}");
    assert!(wiring.iter().any(|d| d == "reqwest"), "{wiring:?}");
}
