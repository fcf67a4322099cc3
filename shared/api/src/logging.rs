//! Log output: JSON lines for CloudWatch, or readable lines locally. `RUST_LOG` filters.

use tracing_subscriber::EnvFilter;

fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"))
}

/// JSON logs with the current span's fields on every line (Lambda).
pub fn init_json() {
    let _ = tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter())
        .with_current_span(true)
        .with_span_list(false)
        .without_time()
        .try_init();
}

/// Human-readable logs (the local gateway).
pub fn init_text() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_target(false)
        .try_init();
}
