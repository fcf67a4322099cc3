//! Limits checked before parsing: size, nesting depth, no DTD, and how many elements and test
//! cases the parser will be given.
//!
//! A report is data from outside. Without a DTD no entity can be declared, so none is ever
//! expanded (no "billion laughs"); a bounded depth keeps the recursive parser's stack small;
//! and counting elements and `<testcase>`s (each repetition of a test case included) before
//! the parser builds its tree bounds the memory of that tree.

use crate::JunitError;
use quick_xml::Reader;
use quick_xml::events::{BytesStart, Event};

/// What the reports of one upload may be, in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of XML after decompression, over every report of the upload.
    pub max_xml_bytes: usize,
    /// Depth of nested elements (`testsuites` > `testsuite` > `testcase` > `failure` is 4).
    pub max_depth: usize,
    /// `<testcase>` elements over every report, a test case written again (a retry) counted
    /// again.
    pub max_cases: usize,
    /// Attempts at one test case: its repetitions and their `<flakyFailure>`,
    /// `<rerunFailure>`, ... elements.
    pub max_attempts: usize,
    /// Elements of any kind over every report.
    pub max_elements: usize,
    /// Bytes of a test case's name, classname, file or suite name.
    pub max_field_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_xml_bytes: 64 * 1024 * 1024,
            max_depth: 32,
            max_cases: 200_000,
            max_attempts: 1_000,
            max_elements: 1_000_000,
            max_field_bytes: 4096,
        }
    }
}

/// What the reports read so far used of the [`Limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Used {
    pub xml_bytes: usize,
    pub cases: usize,
    pub elements: usize,
}

/// The five entities XML predefines; any other reference needs a DTD, which is refused.
const PREDEFINED: [&str; 5] = ["lt", "gt", "amp", "apos", "quot"];

/// The elements that record one more attempt at the test case around them.
const RERUNS: [&[u8]; 4] = [
    b"flakyFailure",
    b"flakyError",
    b"rerunFailure",
    b"rerunError",
];

/// Walks one document: refuses a DTD, references to undeclared entities, nesting deeper than
/// the limit, more elements or test cases than `used` leaves of the limits, and a test case
/// element with more retries than the attempts limit; reports malformed XML with its byte
/// offset. Adds what the document uses to `used`.
pub fn check(xml: &[u8], limits: &Limits, used: &mut Used) -> Result<(), JunitError> {
    std::str::from_utf8(xml).map_err(|e| JunitError::Encoding(e.to_string()))?;
    let mut reader = Reader::from_reader(xml);
    let mut walk = Walk::default();
    loop {
        let event = reader
            .read_event()
            .map_err(|e| JunitError::Xml(format!("{e} (at byte {})", reader.error_position())))?;
        match event {
            Event::DocType(_) => return Err(JunitError::Doctype),
            Event::Start(e) => walk.open(&e, limits, used)?,
            Event::Empty(e) => {
                walk.open(&e, limits, used)?;
                walk.close();
            }
            Event::End(_) => walk.close(),
            Event::GeneralRef(r) if !r.is_char_ref() && !PREDEFINED.contains(&&*r) => {
                return Err(JunitError::Xml(format!(
                    "refers to the undeclared entity &{};",
                    &*r
                )));
            }
            Event::Eof => return Ok(()),
            _ => {}
        }
    }
}

/// Where the walk is: the depth, and the retries of the test case it is in.
#[derive(Default)]
struct Walk {
    depth: usize,
    /// The depth of the open `<testcase>`, if one is open.
    case_depth: Option<usize>,
    reruns: usize,
}

impl Walk {
    fn open(&mut self, e: &BytesStart, limits: &Limits, used: &mut Used) -> Result<(), JunitError> {
        self.depth += 1;
        if self.depth > limits.max_depth {
            return Err(JunitError::TooDeep(limits.max_depth));
        }
        used.elements += 1;
        if used.elements > limits.max_elements {
            return Err(JunitError::TooManyElements(limits.max_elements));
        }
        let local = e.local_name();
        let name = local.into_inner().as_bytes();
        if name == b"testcase" {
            used.cases += 1;
            if used.cases > limits.max_cases {
                return Err(JunitError::TooManyCases(limits.max_cases));
            }
            self.case_depth = Some(self.depth);
            self.reruns = 0;
        } else if self.case_depth.is_some() && RERUNS.contains(&name) {
            self.reruns += 1;
            if self.reruns + 1 > limits.max_attempts {
                return Err(JunitError::TooManyAttempts(limits.max_attempts));
            }
        }
        Ok(())
    }

    fn close(&mut self) {
        if self.case_depth == Some(self.depth) {
            self.case_depth = None;
        }
        self.depth = self.depth.saturating_sub(1);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check_str(xml: &str) -> Result<(), JunitError> {
        check(xml.as_bytes(), &Limits::default(), &mut Used::default())
    }

    #[test]
    fn test_cases_count_with_their_repetitions_across_reports() {
        let limits = Limits {
            max_cases: 5,
            max_attempts: 3,
            ..Limits::default()
        };
        let mut used = Used::default();
        let three = "<testsuite><testcase name=\"a\"/><testcase name=\"a\"/><testcase name=\"a\"></testcase></testsuite>";
        check(three.as_bytes(), &limits, &mut used).unwrap();
        assert_eq!((used.cases, used.elements), (3, 4));
        assert_eq!(
            check(three.as_bytes(), &limits, &mut used),
            Err(JunitError::TooManyCases(5)),
            "the second report brings the upload to six"
        );
        let reruns = "<testcase name=\"a\"><rerunFailure/><flakyFailure/><rerunError/></testcase>";
        assert_eq!(
            check(reruns.as_bytes(), &limits, &mut Used::default()),
            Err(JunitError::TooManyAttempts(3))
        );
        let elements = Limits {
            max_elements: 3,
            ..Limits::default()
        };
        assert_eq!(
            check(three.as_bytes(), &elements, &mut Used::default()),
            Err(JunitError::TooManyElements(3))
        );
    }

    #[test]
    fn billion_laughs_is_refused_for_its_doctype() {
        let xml = r#"<?xml version="1.0"?>
<!DOCTYPE lolz [<!ENTITY lol "lol"><!ENTITY lol2 "&lol;&lol;&lol;&lol;&lol;">]>
<testsuite name="x"><testcase name="&lol2;"/></testsuite>"#;
        assert_eq!(check_str(xml), Err(JunitError::Doctype));
    }

    #[test]
    fn external_entities_are_refused() {
        let xml = r#"<!DOCTYPE t [<!ENTITY xxe SYSTEM "file:///etc/passwd">]><testsuite>&xxe;</testsuite>"#;
        assert_eq!(check_str(xml), Err(JunitError::Doctype));
        let undeclared = check_str("<testsuite><testcase name=\"a\">&xxe;</testcase></testsuite>");
        assert!(matches!(undeclared, Err(JunitError::Xml(m)) if m.contains("&xxe;")));
    }

    #[test]
    fn deep_nesting_is_refused() {
        let deep = format!("{}{}", "<testsuite>".repeat(33), "</testsuite>".repeat(33));
        assert_eq!(check_str(&deep), Err(JunitError::TooDeep(32)));
        let ok = format!("{}{}", "<testsuite>".repeat(32), "</testsuite>".repeat(32));
        assert_eq!(check_str(&ok), Ok(()));
    }

    #[test]
    fn predefined_and_character_references_are_fine() {
        assert_eq!(
            check_str("<testsuite name=\"a&amp;b\">x &lt; y &#xA; &#65;</testsuite>"),
            Ok(())
        );
    }

    #[test]
    fn malformed_xml_says_where() {
        let err = check_str("<testsuite><testcase></testsuite>").unwrap_err();
        assert!(
            matches!(err, JunitError::Xml(ref m) if m.contains("at byte")),
            "{err}"
        );
    }
}
