//! Metric figures ([`mq_core::metrics::QueueFigures`]) rendered for their readers:
//!
//! - [`prometheus_text`]: the Prometheus text format (0.0.4) of `getMergeQueueMetrics`;
//! - [`emf`]: CloudWatch Embedded Metric Format lines, which the tick logs for every queue so
//!   that CloudWatch alarms work without a scraper.
//!
//! Both use the metric names and labels of [`names`].

pub mod emf;
pub mod names;
pub mod prometheus_text;
