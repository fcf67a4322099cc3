//! Log output: JSON lines for CloudWatch, or readable lines locally.
//!
//! `RUST_LOG` filters: a level for everything (`debug`), or levels per target
//! (`info,mq_store=debug`), as [`Targets`] reads them; without it, or when it does not read,
//! `info`. (Targets, not `EnvFilter`: the span and field filters `EnvFilter` adds need the
//! `regex` crates, which every function would link, and the template only sets a level.)

use std::io::IsTerminal;
use std::str::FromStr;
use tracing::Subscriber;
use tracing_subscriber::filter::Targets;
use tracing_subscriber::fmt::MakeWriter;
use tracing_subscriber::layer::SubscriberExt;
use tracing_subscriber::util::SubscriberInitExt;

/// The filter of `directives` (`info`, `info,mq_store=debug`); `info` when they do not read.
pub fn levels(directives: &str) -> Targets {
    Some(directives.trim())
        .filter(|d| !d.is_empty())
        .and_then(|d| Targets::from_str(d).ok())
        .unwrap_or_else(|| Targets::new().with_default(tracing::Level::INFO))
}

/// The filter `RUST_LOG` sets.
fn filter() -> Targets {
    levels(&std::env::var("RUST_LOG").unwrap_or_default())
}

/// The JSON log format of the functions, written to `writer` through `filter`: one object per
/// line, with the fields of the current span (the request's: request id, route, organisation,
/// queue) under `span`. No timestamp: CloudWatch stamps every line.
pub fn json_logs<W>(writer: W, filter: Targets) -> impl Subscriber + Send + Sync + 'static
where
    W: for<'a> MakeWriter<'a> + Send + Sync + 'static,
{
    let format = tracing_subscriber::fmt::layer()
        .json()
        .with_current_span(true)
        .with_span_list(false)
        .without_time()
        .with_writer(writer);
    tracing_subscriber::registry().with(filter).with(format)
}

/// JSON logs on standard output (Lambda).
pub fn init_json() {
    let _ = json_logs(std::io::stdout, filter()).try_init();
}

/// Human-readable logs on standard output (the local gateway), in colour only when that is a
/// terminal and `NO_COLOR` is not set: logs written to a file or a pipe carry no escape codes.
pub fn init_text() {
    let colour = std::io::stdout().is_terminal() && std::env::var_os("NO_COLOR").is_none();
    let format = tracing_subscriber::fmt::layer()
        .with_target(false)
        .with_ansi(colour);
    let _ = tracing_subscriber::registry()
        .with(filter())
        .with(format)
        .try_init();
}

#[cfg(test)]
mod tests {
    use super::*;
    use tracing::Level;
    use tracing::level_filters::LevelFilter;

    #[test]
    fn a_level_applies_to_every_target_and_a_target_can_have_its_own() {
        let debug = levels("debug");
        assert!(debug.would_enable("mq_service::queues", &Level::DEBUG));
        assert!(!debug.would_enable("mq_service::queues", &Level::TRACE));
        let mixed = levels("warn,mq_store=debug");
        assert!(mixed.would_enable("mq_store::dynamo", &Level::DEBUG));
        assert!(!mixed.would_enable("mq_service", &Level::INFO));
        assert!(mixed.would_enable("mq_service", &Level::WARN));
    }

    #[test]
    fn nothing_or_what_does_not_read_is_info() {
        for directives in ["", "  ", "mq_service=noisy", "a=b=c"] {
            let filter = levels(directives);
            assert_eq!(
                filter.default_level(),
                Some(LevelFilter::INFO),
                "{directives:?}"
            );
        }
    }
}
