//! The HTTPS client of a deployed function's AWS SDK clients.
//!
//! The SDK's default client trusts the system's root certificates, which it loads when a
//! client is built, at a cold start (`rustls-native-certs`): the system's bundle file, then
//! every file of every certificate directory, the same roots again. On Debian that is the
//! bundle and some 290 files more; on Fedora-based systems such as Amazon Linux 2023,
//! `/etc/ssl/certs` and `/etc/pki/tls/certs` are one directory, read twice, holding the bundle
//! and its copy with trust flags. The client here is the SDK's default in every other respect (hyper 1.x, rustls on
//! aws-lc, a proxy from `HTTPS_PROXY`/`NO_PROXY`) and trusts the roots of the bundle file
//! alone, read once. With `SSL_CERT_FILE` or `SSL_CERT_DIR` set, or without a bundle file,
//! the functions keep the SDK's default, which reads those.

use aws_sdk_dynamodb::config::SharedHttpClient;
use aws_smithy_http_client::proxy::ProxyConfig;
use aws_smithy_http_client::tls::rustls_provider::CryptoMode;
use aws_smithy_http_client::tls::{Provider, TlsContext, TrustStore};
use aws_smithy_http_client::{Builder, ConnectorBuilder};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use rustls::RootCertStore;
use rustls::pki_types::CertificateDer;
use rustls::pki_types::pem::PemObject;
use std::path::{Path, PathBuf};

/// The variables the SDK's own loading of root certificates reads instead of the system's.
const CERTIFICATE_VARIABLES: [&str; 2] = ["SSL_CERT_FILE", "SSL_CERT_DIR"];

/// The system's bundle of root certificates, unless the environment names other certificates
/// (`SSL_CERT_FILE`, `SSL_CERT_DIR`): the first of the well-known bundle files that exists
/// (`/etc/ssl/certs/ca-certificates.crt` on Debian,
/// `/etc/pki/ca-trust/extracted/pem/tls-ca-bundle.pem` on Fedora-based systems, ...), as
/// `openssl-probe` looks for it.
pub fn system_bundle() -> Option<PathBuf> {
    if CERTIFICATE_VARIABLES
        .iter()
        .any(|v| std::env::var_os(v).is_some())
    {
        return None;
    }
    openssl_probe::probe().cert_file
}

/// An HTTPS client that trusts the root certificates of `bundle` (PEM). Certificates that do
/// not parse as trust anchors are left out, as the SDK's loading of the system's leaves them
/// out. An error when the file cannot be read or holds no usable certificate.
pub fn client_trusting(bundle: &Path) -> Result<SharedHttpClient, String> {
    let pem = std::fs::read(bundle).map_err(|e| format!("{}: {e}", bundle.display()))?;
    let roots = trust_anchors_pem(&pem);
    if roots.is_empty() {
        return Err(format!("{}: no root certificate", bundle.display()));
    }
    let trust = TrustStore::empty()
        .with_native_roots(false)
        .with_pem_certificate(roots);
    let context = TlsContext::builder()
        .with_trust_store(trust)
        .build()
        .map_err(|e| e.to_string())?;
    Ok(default_client_with(context))
}

/// The SDK's default HTTPS client (`default_https_client` in aws-smithy-runtime), with `tls`.
fn default_client_with(tls: TlsContext) -> SharedHttpClient {
    Builder::new().build_with_connector_fn(move |settings, components| {
        let mut builder = ConnectorBuilder::default()
            .tls_provider(Provider::Rustls(CryptoMode::AwsLc))
            .tls_context(tls.clone());
        builder.set_connector_settings(settings.cloned());
        if let Some(components) = components {
            builder.set_sleep_impl(components.sleep_impl());
        }
        builder.set_proxy_config(Some(ProxyConfig::from_env()));
        builder.build()
    })
}

/// The certificates of `pem` that are usable as trust anchors, as PEM again: the SDK panics
/// on one that is not, where the system's loading skips it.
fn trust_anchors_pem(pem: &[u8]) -> String {
    let mut out = String::with_capacity(pem.len());
    for der in CertificateDer::pem_slice_iter(pem).filter_map(Result::ok) {
        if RootCertStore::empty().add(der.clone()).is_ok() {
            push_pem(&mut out, &der);
        }
    }
    out
}

/// One certificate in PEM: its DER in base64, 64 characters a line.
fn push_pem(out: &mut String, der: &[u8]) {
    out.push_str("-----BEGIN CERTIFICATE-----\n");
    let text = STANDARD.encode(der);
    for line in text.as_bytes().chunks(64) {
        out.push_str(std::str::from_utf8(line).unwrap_or_default());
        out.push('\n');
    }
    out.push_str("-----END CERTIFICATE-----\n");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn what_is_not_a_certificate_is_left_out() {
        let garbage = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n\
                       -----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n";
        assert_eq!(trust_anchors_pem(garbage.as_bytes()), "");
        assert!(client_trusting(Path::new("/nonexistent/bundle.pem")).is_err());
    }
}
