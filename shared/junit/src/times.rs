//! Durations written with grouped digits: Maven Surefire formats `time` with the English
//! number format, so a suite or test that ran over 1,000 seconds says `time="1,234.567"`,
//! which the parser refuses as a number. The service never uses durations; taking the
//! grouping out keeps such a report readable.

use crate::JunitError;
use quick_xml::events::attributes::Attribute;
use quick_xml::events::{BytesStart, Event};
use quick_xml::{Reader, Writer};
use std::borrow::Cow;

/// The document with the commas taken out of every `time` attribute; everything else as it
/// was.
pub fn ungrouped(xml: &[u8]) -> Result<Vec<u8>, JunitError> {
    let mut reader = Reader::from_reader(xml);
    let mut writer = Writer::new(Vec::with_capacity(xml.len()));
    loop {
        let event = match reader.read_event().map_err(xml_error)? {
            Event::Eof => break,
            Event::Start(e) => Event::Start(ungrouped_element(e)?),
            Event::Empty(e) => Event::Empty(ungrouped_element(e)?),
            other => other,
        };
        writer.write_event(event).map_err(xml_error)?;
    }
    Ok(writer.into_inner())
}

fn ungrouped_element(element: BytesStart<'_>) -> Result<BytesStart<'_>, JunitError> {
    let is_time = |a: &Attribute| a.key.as_ref() == "time";
    let mut attributes = Vec::new();
    for attribute in element.attributes() {
        attributes.push(attribute.map_err(xml_error)?);
    }
    if !attributes
        .iter()
        .any(|a| is_time(a) && a.value.contains(','))
    {
        return Ok(element);
    }
    let name = element.name().as_ref().to_owned();
    let mut out = BytesStart::new(name);
    for mut attribute in attributes {
        if is_time(&attribute) {
            attribute.value = Cow::Owned(attribute.value.replace(',', ""));
        }
        out.push_attribute(attribute);
    }
    Ok(out.into_owned())
}

fn xml_error(e: impl std::fmt::Display) -> JunitError {
    JunitError::Xml(e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn grouped_durations_lose_their_commas_and_nothing_else_changes() {
        let xml = br#"<testsuite name="a,b" time="1,234.5"><testcase name="t, u" time="2,000"><system-out>time="1,5"</system-out></testcase></testsuite>"#;
        let out = String::from_utf8(ungrouped(xml).unwrap()).unwrap();
        assert_eq!(
            out,
            r#"<testsuite name="a,b" time="1234.5"><testcase name="t, u" time="2000"><system-out>time="1,5"</system-out></testcase></testsuite>"#
        );
    }
}
