//! What a deployed function is built from: the AWS configuration and clients, the store chosen
//! by configuration, the GitHub App's secrets, the uploads bucket on S3, JSON logs, and the
//! Lambda runtime loop serving one row of the route table (`mq_http::routes`).

pub mod deployed;
pub mod https;
pub mod lambda;
pub mod logging;
pub mod pages;
pub mod s3;
pub mod secrets;

pub use lambda::run_route;
pub use pages::run_pages;
