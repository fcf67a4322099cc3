//! JUnit XML reports, as test runners write them (pytest, cargo-nextest, Maven Surefire,
//! gotestsum, jest-junit), turned into one [`CaseRun`] per test case with its attempts.
//!
//! - [`read_report`] takes the bytes of one file, plain or gzip, checks the limits
//!   ([`limits`]), parses it with `junit-parser` and normalises retries ([`normalise`]).
//! - Retries inside one report become attempts: `<flakyFailure>`/`<flakyError>` (failed attempts
//!   before a pass), `<rerunFailure>`/`<rerunError>` (failed attempts after a failure), and a
//!   test case written more than once (pytest-rerunfailures, gotestsum `--rerun-fails`).

pub mod limits;
pub mod normalise;
mod times;

pub use limits::{Limits, Used};
pub use normalise::{Attempt, CaseRun, Report};

use std::io::Read;

/// Why a report was refused. Messages are fit for the client: they say what is wrong.
#[derive(Debug, thiserror::Error, Clone, PartialEq, Eq)]
pub enum JunitError {
    #[error("is not valid gzip: {0}")]
    Gzip(String),
    #[error("decompresses past the upload's limit of {0} bytes of XML")]
    TooLarge(usize),
    #[error("is not UTF-8 XML: {0}")]
    Encoding(String),
    #[error(
        "has a document type declaration (<!DOCTYPE>); DTDs and entity declarations are refused"
    )]
    Doctype,
    #[error("nests elements deeper than {0} levels")]
    TooDeep(usize),
    #[error("has more than {0} test cases in the upload (each repetition of a test case counted)")]
    TooManyCases(usize),
    #[error("has a test case with more than {0} attempts")]
    TooManyAttempts(usize),
    #[error("has more than {0} XML elements in the upload")]
    TooManyElements(usize),
    #[error("test case {case} has a {field} longer than {max} bytes")]
    FieldTooLong {
        /// The test case's position in the report, from 1.
        case: usize,
        field: &'static str,
        max: usize,
    },
    #[error("is not well-formed XML: {0}")]
    Xml(String),
    #[error("is not a JUnit report: {0}")]
    NotJunit(String),
}

/// Parses one report file, plain or gzip (detected by its magic bytes), within `limits`.
pub fn read_report(bytes: &[u8], limits: &Limits) -> Result<Report, JunitError> {
    read_next_report(bytes, limits, &mut Used::default())
}

/// Parses one report of an upload, within what the upload's earlier reports (`used`) left
/// of `limits`, and adds what it uses.
pub fn read_next_report(
    bytes: &[u8],
    limits: &Limits,
    used: &mut Used,
) -> Result<Report, JunitError> {
    let room = limits.max_xml_bytes.saturating_sub(used.xml_bytes);
    let xml = decompress(bytes, room).map_err(|e| match e {
        JunitError::TooLarge(_) => JunitError::TooLarge(limits.max_xml_bytes),
        other => other,
    })?;
    used.xml_bytes += xml.len();
    limits::check(&xml, limits, used)?;
    let suites = match junit_parser::from_reader(xml.as_slice()) {
        // Maven Surefire groups the digits of a duration over 1,000 s (`time="1,234.5"`).
        Err(junit_parser::Error::ParseFloatError(_)) => {
            junit_parser::from_reader(times::ungrouped(&xml)?.as_slice())
        }
        parsed => parsed,
    }
    .map_err(describe_parse_error)?;
    drop(xml);
    let report = normalise::report(&suites);
    drop(suites);
    check_fields(&report, limits.max_field_bytes)?;
    Ok(report)
}

/// Refuses a test case whose identifying strings are longer than `max` bytes: they are
/// stored with every result and shown in every list.
fn check_fields(report: &Report, max: usize) -> Result<(), JunitError> {
    for (i, case) in report.cases.iter().enumerate() {
        let fields = [
            ("name", case.name.as_str()),
            ("classname", case.classname.as_str()),
            ("file", case.file.as_deref().unwrap_or_default()),
            ("suite name", case.parent.as_str()),
        ];
        if let Some((field, _)) = fields.iter().find(|(_, v)| v.len() > max) {
            return Err(JunitError::FieldTooLong {
                case: i + 1,
                field,
                max,
            });
        }
    }
    Ok(())
}

/// Whether the bytes start with the gzip magic number.
pub fn is_gzip(bytes: &[u8]) -> bool {
    bytes.starts_with(&[0x1f, 0x8b])
}

/// The XML of a file: gzip is inflated, up to `max` bytes (a small bomb must not become a
/// large allocation).
fn decompress(bytes: &[u8], max: usize) -> Result<Vec<u8>, JunitError> {
    if !is_gzip(bytes) {
        if bytes.len() > max {
            return Err(JunitError::TooLarge(max));
        }
        return Ok(bytes.to_vec());
    }
    let mut out = Vec::new();
    let decoder = flate2::read::MultiGzDecoder::new(bytes);
    decoder
        .take(max as u64 + 1)
        .read_to_end(&mut out)
        .map_err(|e| JunitError::Gzip(e.to_string()))?;
    if out.len() > max {
        return Err(JunitError::TooLarge(max));
    }
    Ok(out)
}

fn describe_parse_error(e: junit_parser::Error) -> JunitError {
    use std::error::Error as _;
    match &e {
        junit_parser::Error::UnexpectedEndOfFile(what) if what == "testsuites" => {
            JunitError::NotJunit("no <testsuites> or <testsuite> root element".to_owned())
        }
        junit_parser::Error::UnexpectedEndOfFile(what) => {
            JunitError::Xml(format!("the document ends inside a <{what}> element"))
        }
        junit_parser::Error::MissingPropertyName => {
            JunitError::NotJunit("a <property> has no name".to_owned())
        }
        _ => {
            let detail = e.source().map(ToString::to_string).unwrap_or_default();
            JunitError::Xml(if detail.is_empty() {
                e.to_string()
            } else {
                format!("{e}: {detail}")
            })
        }
    }
}
