//! Log output: JSON lines for CloudWatch, or readable lines locally. `RUST_LOG` filters.

use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::format::{Format, Json, JsonFields};
use tracing_subscriber::fmt::{MakeWriter, SubscriberBuilder};

fn filter() -> EnvFilter {
    EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info"))
}

/// The JSON log format of the functions, written to `writer`: one object per line, with the
/// fields of the current span (the request's: request id, route, organisation, queue) under
/// `span`. No timestamp: CloudWatch stamps every line.
pub fn json_logs<W>(writer: W) -> SubscriberBuilder<JsonFields, Format<Json, ()>, EnvFilter, W>
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    tracing_subscriber::fmt()
        .json()
        .with_env_filter(filter())
        .with_current_span(true)
        .with_span_list(false)
        .without_time()
        .with_writer(writer)
}

/// JSON logs on standard output (Lambda).
pub fn init_json() {
    let _ = json_logs(std::io::stdout).try_init();
}

/// Human-readable logs (the local gateway).
pub fn init_text() {
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter())
        .with_target(false)
        .try_init();
}
