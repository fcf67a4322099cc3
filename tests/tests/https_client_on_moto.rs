//! The functions' HTTPS client (`mq_lambda::https::client_trusting`) against a real TLS server:
//! moto on 127.0.0.1, behind a certificate signed by a test authority. DynamoDB answers when
//! the bundle holds that authority (among entries the client leaves out), and the handshake
//! is refused when the bundle holds only another authority.

use aws_sdk_dynamodb::Client;
use aws_sdk_dynamodb::config::retry::RetryConfig;
use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region, SharedHttpClient};
use mq_tables::moto::MotoServer;
use std::path::Path;
use std::process::Command;

/// Writes `authority.pem`, `other.pem` (another authority), `server.pem` (127.0.0.1, signed
/// by the first) and `server.key` into the folder named by its argument.
const CERTIFICATES: &str = r#"
import sys, datetime, ipaddress
from cryptography import x509
from cryptography.x509.oid import NameOID, ExtendedKeyUsageOID
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec

out = sys.argv[1]
now = datetime.datetime.now(datetime.timezone.utc)
day = datetime.timedelta(days=1)

def name(cn):
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])

def certificate(subject, key, issuer, issuer_key, extensions):
    builder = (x509.CertificateBuilder().subject_name(name(subject)).issuer_name(name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - day).not_valid_after(now + day))
    for extension, critical in extensions:
        builder = builder.add_extension(extension, critical=critical)
    return builder.sign(issuer_key, hashes.SHA256())

def authority(cn):
    key = ec.generate_private_key(ec.SECP256R1())
    usage = x509.KeyUsage(digital_signature=True, content_commitment=False,
                          key_encipherment=False, data_encipherment=False, key_agreement=False,
                          key_cert_sign=True, crl_sign=True, encipher_only=False,
                          decipher_only=False)
    return key, certificate(cn, key, cn, key, [
        (x509.BasicConstraints(ca=True, path_length=None), True), (usage, True)])

def write(file, data):
    with open(f"{out}/{file}", "wb") as f:
        f.write(data)

pem = serialization.Encoding.PEM
ca_key, ca = authority("test authority")
_, other = authority("another authority")
server_key = ec.generate_private_key(ec.SECP256R1())
server = certificate("127.0.0.1", server_key, "test authority", ca_key, [
    (x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False),
    (x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]), False)])
write("authority.pem", ca.public_bytes(pem))
write("other.pem", other.public_bytes(pem))
write("server.pem", server.public_bytes(pem))
write("server.key", server_key.private_bytes(pem, serialization.PrivateFormat.PKCS8,
                                             serialization.NoEncryption()))
"#;

/// An entry of a bundle that is not a usable certificate.
const NOT_A_CERTIFICATE: &str = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n";

fn write_certificates(dir: &Path) {
    let python = mq_tables::moto::ensure_installed().expect("moto installed");
    let status = Command::new(python)
        .args(["-c", CERTIFICATES])
        .arg(dir)
        .status()
        .expect("python runs");
    assert!(status.success(), "certificates written");
}

fn dynamodb(endpoint: &str, http: SharedHttpClient) -> Client {
    let config = aws_sdk_dynamodb::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("test", "test", None, None, "test"))
        .endpoint_url(endpoint)
        .retry_config(RetryConfig::disabled())
        .http_client(http)
        .build();
    Client::from_conf(config)
}

fn bundle(dir: &Path, name: &str, parts: &[&str]) -> std::path::PathBuf {
    let text: String = parts
        .iter()
        .map(|part| match part.strip_suffix(".pem") {
            Some(_) => std::fs::read_to_string(dir.join(part)).expect("certificate"),
            None => (*part).to_owned(),
        })
        .collect();
    let path = dir.join(name);
    std::fs::write(&path, text).expect("bundle written");
    path
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_https_client_trusts_the_authorities_of_its_bundle_on_moto() {
    let dir = tempfile::tempdir().expect("a temporary folder");
    write_certificates(dir.path());
    let moto = MotoServer::start_tls(
        &dir.path().join("server.pem"),
        &dir.path().join("server.key"),
    )
    .expect("moto serves HTTPS");

    let trusted = bundle(
        dir.path(),
        "trusted.pem",
        &[NOT_A_CERTIFICATE, "other.pem", "authority.pem"],
    );
    let client = mq_lambda::https::client_trusting(&trusted).expect("a client");
    let listed = dynamodb(&moto.endpoint, client).list_tables().send().await;
    assert!(listed.is_ok(), "DynamoDB over TLS: {listed:?}");

    let untrusted = bundle(dir.path(), "untrusted.pem", &["other.pem"]);
    let client = mq_lambda::https::client_trusting(&untrusted).expect("a client");
    let refused = dynamodb(&moto.endpoint, client).list_tables().send().await;
    let error = refused.expect_err("a server signed by an authority not in the bundle");
    assert!(
        matches!(error, aws_sdk_dynamodb::error::SdkError::DispatchFailure(_)),
        "refused before any request is sent: {error:?}"
    );

    let nothing = bundle(dir.path(), "nothing.pem", &[NOT_A_CERTIFICATE]);
    assert!(
        mq_lambda::https::client_trusting(&nothing).is_err(),
        "a bundle without a certificate is refused, and the SDK's default is kept"
    );
}
