//! Limits checked before parsing: size, nesting depth, no DTD.
//!
//! A report is data from outside. Without a DTD no entity can be declared, so none is ever
//! expanded (no "billion laughs"), and a bounded depth keeps the recursive parser's stack small.

use crate::JunitError;
use quick_xml::Reader;
use quick_xml::events::Event;

/// What one report may be.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Bytes of XML after decompression.
    pub max_xml_bytes: usize,
    /// Depth of nested elements (`testsuites` > `testsuite` > `testcase` > `failure` is 4).
    pub max_depth: usize,
    /// Test cases in one report.
    pub max_cases: usize,
    /// Bytes of a test case's name, classname, file or suite name.
    pub max_field_bytes: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Self {
            max_xml_bytes: 64 * 1024 * 1024,
            max_depth: 32,
            max_cases: 200_000,
            max_field_bytes: 4096,
        }
    }
}

/// The five entities XML predefines; any other reference needs a DTD, which is refused.
const PREDEFINED: [&str; 5] = ["lt", "gt", "amp", "apos", "quot"];

/// Walks the document once: refuses a DTD, references to undeclared entities, and nesting
/// deeper than the limit; reports malformed XML with its byte offset.
pub fn check(xml: &[u8], limits: &Limits) -> Result<(), JunitError> {
    std::str::from_utf8(xml).map_err(|e| JunitError::Encoding(e.to_string()))?;
    let mut reader = Reader::from_reader(xml);
    let mut depth = 0usize;
    loop {
        let event = reader
            .read_event()
            .map_err(|e| JunitError::Xml(format!("{e} (at byte {})", reader.error_position())))?;
        match event {
            Event::DocType(_) => return Err(JunitError::Doctype),
            Event::Start(_) => {
                depth += 1;
                if depth > limits.max_depth {
                    return Err(JunitError::TooDeep(limits.max_depth));
                }
            }
            Event::End(_) => depth = depth.saturating_sub(1),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn check_str(xml: &str) -> Result<(), JunitError> {
        check(xml.as_bytes(), &Limits::default())
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
