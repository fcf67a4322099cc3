//! An upload as evidence: one that failed almost every test is an infrastructure failure
//! (a broken runner, a full disk), not news about the tests.

use super::settings::Thresholds;

/// At least `infra_failure_percent`% of at least `infra_min_tests` tests that ran failed.
pub fn is_infrastructure_failure(ran: usize, failed: usize, t: &Thresholds) -> bool {
    ran >= t.infra_min_tests as usize && failed * 100 >= t.infra_failure_percent as usize * ran
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn most_tests_failing_in_one_upload_is_infrastructure() {
        let t = Thresholds::default();
        assert!(is_infrastructure_failure(10, 8, &t));
        assert!(is_infrastructure_failure(500, 499, &t));
        assert!(!is_infrastructure_failure(10, 7, &t), "70% is evidence");
        assert!(
            !is_infrastructure_failure(9, 9, &t),
            "too few tests to tell"
        );
    }
}
