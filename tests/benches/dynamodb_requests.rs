//! The DynamoDB requests of every endpoint, counted by an SDK interceptor on the store's
//! client against moto on loopback; prints the table of BENCHMARKS.md.
//!
//! `cargo bench -p e2e-tests --bench dynamodb_requests`

use e2e::requests::{TABLE_HEADER, measure};

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let measured = measure().await;
    println!("{TABLE_HEADER}");
    for m in &measured {
        println!("{}", m.row());
    }
    println!();
    println!("In order, per call:");
    for m in &measured {
        let sent: Vec<String> = m.sent.iter().map(ToString::to_string).collect();
        println!("- {} ({}): {}", m.endpoint, m.case, sent.join(" → "));
    }
}
