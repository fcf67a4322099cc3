//! Quarantine: a repository switch, auto-quarantine of FLAKY tests, and per-test overrides.

use super::classify::StatusKind;
use super::settings::RepoHealthSettings;
use crate::error::DomainError;
use serde::{Deserialize, Serialize};

/// A test's own quarantine rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize, Default)]
#[serde(rename_all = "SCREAMING_SNAKE_CASE")]
pub enum QuarantineOverride {
    /// Follow the repository: quarantined when auto-quarantine is on and the test is FLAKY.
    #[default]
    Auto,
    AlwaysQuarantine,
    NeverQuarantine,
}

impl QuarantineOverride {
    /// Parses `AUTO`, `ALWAYS_QUARANTINE` or `NEVER_QUARANTINE`, in any case.
    pub fn parse(field: &str, s: &str) -> Result<Self, DomainError> {
        match s.to_ascii_uppercase().as_str() {
            "AUTO" => Ok(Self::Auto),
            "ALWAYS_QUARANTINE" => Ok(Self::AlwaysQuarantine),
            "NEVER_QUARANTINE" => Ok(Self::NeverQuarantine),
            _ => Err(DomainError::invalid(
                field,
                &format!("must be AUTO, ALWAYS_QUARANTINE or NEVER_QUARANTINE, got {s:?}"),
            )),
        }
    }

    pub const fn as_str(self) -> &'static str {
        match self {
            Self::Auto => "AUTO",
            Self::AlwaysQuarantine => "ALWAYS_QUARANTINE",
            Self::NeverQuarantine => "NEVER_QUARANTINE",
        }
    }
}

/// Quarantined under some repository settings: the override says always, or it is automatic
/// and the test is FLAKY. (The repository's switches decide whether candidates are
/// quarantined: [`is_quarantined`].)
pub fn is_candidate(rule: QuarantineOverride, status: StatusKind) -> bool {
    match rule {
        QuarantineOverride::AlwaysQuarantine => true,
        QuarantineOverride::NeverQuarantine => false,
        QuarantineOverride::Auto => status == StatusKind::Flaky,
    }
}

/// Quarantined = quarantining on, and override always, or auto with auto-quarantine on and
/// status FLAKY. Broken tests are never quarantined automatically.
pub fn is_quarantined(
    settings: &RepoHealthSettings,
    rule: QuarantineOverride,
    status: StatusKind,
) -> bool {
    settings.quarantining
        && match rule {
            QuarantineOverride::AlwaysQuarantine => true,
            QuarantineOverride::NeverQuarantine => false,
            QuarantineOverride::Auto => settings.auto_quarantine && status == StatusKind::Flaky,
        }
}

#[cfg(test)]
mod tests {
    use super::*;
    use QuarantineOverride::*;
    use StatusKind::*;

    fn settings(quarantining: bool, auto: bool) -> RepoHealthSettings {
        RepoHealthSettings {
            quarantining,
            auto_quarantine: auto,
            ..RepoHealthSettings::default()
        }
    }

    #[test]
    fn nothing_is_quarantined_while_quarantining_is_off() {
        for rule in [Auto, AlwaysQuarantine, NeverQuarantine] {
            assert!(!is_quarantined(&settings(false, true), rule, Flaky));
        }
    }

    #[test]
    fn auto_quarantine_takes_flaky_but_never_broken_tests() {
        let on = settings(true, true);
        assert!(is_quarantined(&on, Auto, Flaky));
        assert!(!is_quarantined(&on, Auto, Broken));
        assert!(!is_quarantined(&on, Auto, Healthy));
        assert!(!is_quarantined(&settings(true, false), Auto, Flaky));
    }

    #[test]
    fn overrides_win_over_status() {
        let on = settings(true, true);
        assert!(is_quarantined(&on, AlwaysQuarantine, Healthy));
        assert!(is_quarantined(
            &settings(true, false),
            AlwaysQuarantine,
            Broken
        ));
        assert!(!is_quarantined(&on, NeverQuarantine, Flaky));
        assert!(is_candidate(AlwaysQuarantine, Healthy) && !is_candidate(Auto, Broken));
    }

    #[test]
    fn overrides_parse_in_any_case() {
        assert_eq!(
            QuarantineOverride::parse("q", "always_quarantine"),
            Ok(AlwaysQuarantine)
        );
        assert_eq!(
            QuarantineOverride::parse("q", "Never_Quarantine"),
            Ok(NeverQuarantine)
        );
        let err = QuarantineOverride::parse("quarantine", "sometimes").unwrap_err();
        assert!(err.message.starts_with("quarantine must be"));
    }
}
