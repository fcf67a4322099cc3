//! Submission priorities (docs/queue-semantics.md §3): an integer 0..=255 or a name.

use crate::error::DomainError;
use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The named levels and their values; lower values go first.
pub const NAMED_PRIORITIES: [(&str, u8); 4] =
    [("urgent", 0), ("high", 10), ("medium", 100), ("low", 200)];

/// The value used when a submission gives none.
pub const DEFAULT_PRIORITY: u8 = 100;

/// The priority of a queue entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Priority {
    pub value: u8,
    /// True when the submission gave no priority and the default applied.
    pub defaulted: bool,
}

impl Priority {
    pub const fn default_priority() -> Self {
        Self {
            value: DEFAULT_PRIORITY,
            defaulted: true,
        }
    }

    pub const fn of(value: u8) -> Self {
        Self {
            value,
            defaulted: false,
        }
    }

    /// Parses a priority name in any case.
    pub fn from_name(name: &str) -> Result<Self, DomainError> {
        NAMED_PRIORITIES
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|&(_, v)| Self::of(v))
            .ok_or_else(|| {
                DomainError::invalid(
                    "priority",
                    "must be an integer from 0 to 255 or one of \"urgent\", \"high\", \"medium\", \"low\"",
                )
            })
    }

    /// Checks an integer priority against 0..=255.
    pub fn from_int(value: i128) -> Result<Self, DomainError> {
        u8::try_from(value).map(Self::of).map_err(|_| {
            DomainError::invalid(
                "priority",
                &format!("must be an integer from 0 to 255 or a priority name, got {value}"),
            )
        })
    }

    /// The level's name, or the number itself for values between the named levels.
    pub fn name(self) -> Cow<'static, str> {
        NAMED_PRIORITIES
            .iter()
            .find(|(_, v)| *v == self.value)
            .map_or_else(
                || Cow::Owned(self.value.to_string()),
                |(n, _)| Cow::Borrowed(*n),
            )
    }

    /// The name of the default priority this is, when the submission gave none
    /// (`usedDefaultPriorityName`).
    pub fn defaulted_name(self) -> Option<Cow<'static, str>> {
        self.defaulted.then(|| self.name())
    }

    /// `urgent` (value 0) skips the line and preempts running tests behind it.
    pub const fn is_urgent(self) -> bool {
        self.value == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_map_to_values_in_any_case() {
        assert_eq!(Priority::from_name("URGENT").unwrap().value, 0);
        assert_eq!(Priority::from_name("High").unwrap().value, 10);
        assert_eq!(Priority::from_name("medium").unwrap().value, 100);
        assert_eq!(Priority::from_name("low").unwrap().value, 200);
        assert!(Priority::from_name("asap").is_err());
    }

    #[test]
    fn integers_are_bounded_and_named_when_they_match_a_level() {
        assert_eq!(Priority::from_int(10).unwrap().name(), "high");
        assert_eq!(Priority::from_int(55).unwrap().name(), "55");
        assert!(Priority::from_int(256).is_err());
        assert!(Priority::from_int(-1).is_err());
    }

    #[test]
    fn the_default_is_medium_and_marked() {
        let p = Priority::default_priority();
        assert_eq!(
            (p.value, p.name().as_ref(), p.defaulted),
            (100, "medium", true)
        );
        assert!(!p.is_urgent());
        assert!(Priority::of(0).is_urgent());
    }
}
