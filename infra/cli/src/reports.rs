//! JUnit reports named by glob patterns: found, read, checked with the project's parser
//! (`mq-junit`), and gzipped for the way.

use crate::error::{Error, Result};
use crate::output::note;
use flate2::Compression;
use flate2::write::GzEncoder;
use mq_junit::{Limits, Report};
use std::collections::BTreeSet;
use std::io::Write;
use std::path::PathBuf;

/// One report file: where it is, its bytes as found (plain or gzip), what it holds.
pub struct ReportFile {
    pub path: PathBuf,
    pub bytes: Vec<u8>,
    pub report: Report,
}

impl ReportFile {
    /// The file's name, as it is sent.
    pub fn name(&self) -> String {
        self.path.file_name().map_or_else(
            || self.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        )
    }

    /// The bytes gzipped (as they are when already gzip).
    pub fn gzipped(&self) -> Result<Vec<u8>> {
        if mq_junit::is_gzip(&self.bytes) {
            return Ok(self.bytes.clone());
        }
        let mut encoder = GzEncoder::new(Vec::new(), Compression::default());
        encoder
            .write_all(&self.bytes)
            .and_then(|()| encoder.finish())
            .map_err(|e| Error::input(format!("cannot gzip {}: {e}", self.path.display())))
    }
}

/// The files the patterns name, sorted, each once. A pattern that matches nothing is
/// noted; none matching anything is an error.
pub fn find(patterns: &[String]) -> Result<Vec<PathBuf>> {
    let mut found = BTreeSet::new();
    for pattern in patterns {
        let paths = glob::glob(pattern)
            .map_err(|e| Error::input(format!("`{pattern}` is not a glob pattern: {e}")))?;
        let mut matched = 0;
        for path in paths {
            let path = path.map_err(|e| Error::input(format!("cannot read {e}")))?;
            if path.is_file() {
                found.insert(path);
                matched += 1;
            }
        }
        if matched == 0 {
            note(format!("no report matches {pattern}"));
        }
    }
    if found.is_empty() {
        return Err(Error::input(format!(
            "no report file matches {}",
            patterns.join(" ")
        )));
    }
    Ok(found.into_iter().collect())
}

/// Finds, reads and checks every report; a file that is not a report is an error naming it.
pub fn load(patterns: &[String]) -> Result<Vec<ReportFile>> {
    find(patterns)?
        .into_iter()
        .map(|path| {
            let bytes = std::fs::read(&path)
                .map_err(|e| Error::input(format!("cannot read {}: {e}", path.display())))?;
            let report = mq_junit::read_report(&bytes, &Limits::default())
                .map_err(|e| Error::input(format!("{} {e}", path.display())))?;
            Ok(ReportFile {
                path,
                bytes,
                report,
            })
        })
        .collect()
}

/// Most report files one upload request may carry (the API's limit, SECURITY.md).
pub const MAX_FILES_PER_UPLOAD: usize = 1_000;

/// Whether the reports fit the limits of one upload request together: at most
/// [`MAX_FILES_PER_UPLOAD`] files, and the XML, test cases and elements of all of them within
/// what the API takes of one upload (through upload URLs each report is an upload of its own).
pub fn fit_one_upload(files: &[ReportFile]) -> bool {
    let limits = Limits::default();
    let mut used = mq_junit::Used::default();
    files.len() <= MAX_FILES_PER_UPLOAD
        && files
            .iter()
            .all(|f| mq_junit::read_next_report(&f.bytes, &limits, &mut used).is_ok())
}

/// A failed test as the API's quarantine check takes it (as its report names it).
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct FailedTest {
    pub name: String,
    pub classname: String,
    pub file: String,
    pub parent: String,
}

/// The tests that may have failed the run, over every report, each once: their final attempt
/// failed, or an occurrence not written as retried did (two jest tests of one title, one
/// failing, are one case whose last occurrence may have passed).
pub fn failed_tests(files: &[ReportFile]) -> Vec<FailedTest> {
    let failed: BTreeSet<FailedTest> = files
        .iter()
        .flat_map(|f| &f.report.cases)
        .filter(|case| case.may_have_failed_the_run())
        .map(|case| FailedTest {
            name: case.name.clone(),
            classname: case.classname.clone(),
            file: case.file.clone().unwrap_or_default(),
            parent: case.parent.clone(),
        })
        .collect();
    failed.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn failed_tests_are_read_from_the_reports() {
        let xml = br#"<testsuite name="s">
            <testcase classname="c" name="passes"/>
            <testcase classname="c" name="fails" file="t.py"><failure message="x"/></testcase>
            <testcase classname="c" name="errors"><error message="x"/></testcase>
            <testcase classname="c" name="skipped"><skipped/></testcase>
        </testsuite>"#;
        let file = ReportFile {
            path: "r.xml".into(),
            bytes: xml.to_vec(),
            report: mq_junit::read_report(xml, &Limits::default()).unwrap(),
        };
        let failed = failed_tests(&[file]);
        let names: Vec<&str> = failed.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["errors", "fails"]);
        assert_eq!(failed[1].file, "t.py");
        assert_eq!(failed[1].parent, "s");
    }

    /// Two jest tests of one title (`test.each` without a placeholder), the first failing:
    /// the suite counts both, so they are not a retry, and the failure is checked although
    /// the last occurrence passed. A rerun (pytest-rerunfailures: the suite counts the test
    /// once) that passed is not.
    #[test]
    fn a_failed_occurrence_not_written_as_retried_is_a_failed_test() {
        let read = |xml: &[u8]| ReportFile {
            path: "r.xml".into(),
            bytes: xml.to_vec(),
            report: mq_junit::read_report(xml, &Limits::default()).unwrap(),
        };
        let twice = read(
            br#"<testsuite name="math" tests="2" failures="1">
            <testcase classname="math parses" name="math parses"><failure>boom</failure></testcase>
            <testcase classname="math parses" name="math parses"/>
        </testsuite>"#,
        );
        let names: Vec<String> = failed_tests(&[twice]).into_iter().map(|t| t.name).collect();
        assert_eq!(names, ["math parses"]);
        let rerun = read(
            br#"<testsuite name="s" tests="1">
            <testcase classname="c" name="flaky"/>
            <testcase classname="c" name="flaky"/>
        </testsuite>"#,
        );
        assert_eq!(failed_tests(&[rerun]), Vec::new());
    }

    #[test]
    fn gzip_round_trips() {
        let xml = b"<testsuite name=\"s\"><testcase name=\"a\"/></testsuite>".to_vec();
        let file = ReportFile {
            path: "r.xml".into(),
            report: mq_junit::read_report(&xml, &Limits::default()).unwrap(),
            bytes: xml,
        };
        let gz = file.gzipped().unwrap();
        assert!(mq_junit::is_gzip(&gz));
        let again = mq_junit::read_report(&gz, &Limits::default()).unwrap();
        assert_eq!(again, file.report);
    }
}
