//! A test case's identity: (repository, file, classname, parent suite, name, variant) → a
//! stable UUID v5, the same on every upload and every deployment.
//!
//! Control characters (NUL, tab, newline, escape, ...) never reach an identity as they are:
//! reports and quarantine checks alike write each as `\u{XX}` ([`TestIdentity::escaped`]),
//! so the same test gets the same id from both, and no stored name holds a raw NUL.

use std::borrow::Cow;

use crate::ids::RepoRef;
use serde::{Deserialize, Serialize};
use uuid::Uuid;

/// The namespace of test case ids (a fixed, random UUID).
pub const TEST_CASE_NAMESPACE: Uuid = Uuid::from_u128(0x6c1d_3b0e_9a4f_4e2b_8f57_2d9c_41a0_e7b3);

/// What names a test case within a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
pub struct TestIdentity {
    /// Source file, when the report names one; empty otherwise.
    #[serde(default)]
    pub file: String,
    #[serde(default)]
    pub classname: String,
    /// The suite around the test case.
    #[serde(default)]
    pub parent: String,
    pub name: String,
    /// The configuration the suite ran in (`linux`, `py3.12`), empty for none.
    #[serde(default)]
    pub variant: String,
}

impl TestIdentity {
    /// The identity with the control characters of every part escaped
    /// ([`escape_controls`]).
    pub fn escaped(self) -> Self {
        let escape = |s: String| match escape_controls(&s) {
            Cow::Borrowed(_) => s,
            Cow::Owned(escaped) => escaped,
        };
        Self {
            file: escape(self.file),
            classname: escape(self.classname),
            parent: escape(self.parent),
            name: escape(self.name),
            variant: escape(self.variant),
        }
    }

    /// The longest of its parts, in bytes.
    pub fn longest_part(&self) -> usize {
        [
            &self.file,
            &self.classname,
            &self.parent,
            &self.name,
            &self.variant,
        ]
        .iter()
        .map(|p| p.len())
        .max()
        .unwrap_or_default()
    }
}

/// `s` with each control character written `\u{XX}` (lowercase hex), the rest as it is.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if c.is_control() {
            out.push_str(&format!("\\u{{{:x}}}", u32::from(c)));
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The id of a test case. Repository names compare case-insensitively (as `RepoRef::key`);
/// the other parts exactly as the report writes them.
pub fn test_case_id(repo: &RepoRef, identity: &TestIdentity) -> Uuid {
    // Unit separators keep ("a b", "c") and ("a", "b c") apart.
    let name = [
        repo.key().as_str(),
        &identity.file,
        &identity.classname,
        &identity.parent,
        &identity.name,
        &identity.variant,
    ]
    .join("\u{1f}");
    Uuid::new_v5(&TEST_CASE_NAMESPACE, name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(repo: &str, name: &str, variant: &str) -> Uuid {
        let repo = RepoRef::new("github.com", "acme", repo).unwrap();
        let identity = TestIdentity {
            classname: "tests.unit".into(),
            parent: "pytest".into(),
            name: name.into(),
            variant: variant.into(),
            ..TestIdentity::default()
        };
        test_case_id(&repo, &identity)
    }

    #[test]
    fn ids_are_stable_v5_and_distinguish_every_part() {
        let a = id("rocket", "test_add", "");
        assert_eq!(a, id("rocket", "test_add", ""));
        assert_eq!(a.get_version_num(), 5);
        assert_ne!(a, id("rocket", "test_add", "linux"));
        assert_ne!(a, id("probe", "test_add", ""));
        assert_ne!(a, id("rocket", "test_sub", ""));
        let upper = RepoRef::new("GitHub.com", "ACME", "Rocket").unwrap();
        let identity = TestIdentity {
            classname: "tests.unit".into(),
            parent: "pytest".into(),
            name: "test_add".into(),
            ..TestIdentity::default()
        };
        assert_eq!(test_case_id(&upper, &identity), a);
    }

    #[test]
    fn control_characters_are_escaped_in_every_part() {
        let raw = TestIdentity {
            file: "a\tb.rs".into(),
            classname: "c\u{1b}[31m".into(),
            parent: "p".into(),
            name: "nul\0end\n".into(),
            variant: "v\u{85}".into(),
        };
        let escaped = raw.escaped();
        assert_eq!(escaped.file, "a\\u{9}b.rs");
        assert_eq!(escaped.classname, "c\\u{1b}[31m");
        assert_eq!(escaped.parent, "p");
        assert_eq!(escaped.name, "nul\\u{0}end\\u{a}");
        assert_eq!(escaped.variant, "v\\u{85}");
        assert_eq!(escape_controls("plain ünïcode"), "plain ünïcode");
    }

    #[test]
    fn separators_keep_fields_apart() {
        let repo = RepoRef::new("github.com", "acme", "rocket").unwrap();
        let one = TestIdentity {
            classname: "a b".into(),
            name: "c".into(),
            ..TestIdentity::default()
        };
        let two = TestIdentity {
            classname: "a".into(),
            name: "b c".into(),
            ..TestIdentity::default()
        };
        assert_ne!(test_case_id(&repo, &one), test_case_id(&repo, &two));
    }
}
