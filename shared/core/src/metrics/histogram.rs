//! Observations counted into buckets as they are made, as a Prometheus histogram keeps them:
//! per bucket how many, in all how many, and their sum.

/// Upper bounds of the duration histograms, in seconds (1 min to 2 h).
pub const DURATION_BUCKETS: [f64; 8] = [60.0, 300.0, 600.0, 900.0, 1800.0, 3600.0, 5400.0, 7200.0];

/// Upper bounds of the CI runs histogram.
pub const CI_RUNS_BUCKETS: [f64; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, 10.0];

/// A histogram over `N` increasing, finite upper bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Histogram<const N: usize> {
    bounds: &'static [f64; N],
    /// Per bound, the observations whose lowest bound at or above them is this one (not
    /// cumulative). Not-a-number and values above every bound are in none.
    in_bucket: [u64; N],
    count: u64,
    sum: f64,
}

/// Seconds, over [`DURATION_BUCKETS`].
pub type Durations = Histogram<8>;

/// CI runs per pull request, over [`CI_RUNS_BUCKETS`].
pub type CiRuns = Histogram<6>;

impl Default for Durations {
    fn default() -> Self {
        Self::new(&DURATION_BUCKETS)
    }
}

impl Default for CiRuns {
    fn default() -> Self {
        Self::new(&CI_RUNS_BUCKETS)
    }
}

impl<const N: usize> Histogram<N> {
    /// No observations yet; `bounds` increasing and finite.
    pub const fn new(bounds: &'static [f64; N]) -> Self {
        Self {
            bounds,
            in_bucket: [0; N],
            count: 0,
            sum: 0.0,
        }
    }

    /// The histogram of `values`, observed in order.
    pub fn of(bounds: &'static [f64; N], values: impl IntoIterator<Item = f64>) -> Self {
        let mut histogram = Self::new(bounds);
        values.into_iter().for_each(|v| histogram.observe(v));
        histogram
    }

    /// Counts `value` in its bucket and in all, and adds it to the sum.
    pub fn observe(&mut self, value: f64) {
        if let Some(i) = self.bounds.iter().position(|b| value <= *b) {
            self.in_bucket[i] += 1;
        }
        self.count += 1;
        self.sum += value;
    }

    /// `n` observations of `value`, as many calls of [`Histogram::observe`] make.
    pub fn observe_times(&mut self, value: f64, n: usize) {
        (0..n).for_each(|_| self.observe(value));
    }

    /// The observations of `other` (same bounds) added to these: counts add, and the sum is
    /// the sum of the two sums.
    pub fn add(&mut self, other: &Self) {
        for (mine, theirs) in self.in_bucket.iter_mut().zip(&other.in_bucket) {
            *mine += theirs;
        }
        self.count += other.count;
        self.sum += other.sum;
    }

    pub fn bounds(&self) -> &'static [f64; N] {
        self.bounds
    }

    /// Per bound, the observations in its bucket alone (not cumulative): above the bound
    /// before it, at or below it.
    pub fn per_bucket(&self) -> &[u64; N] {
        &self.in_bucket
    }

    /// Per bound, the observations at or below it (a Prometheus `_bucket` line each).
    pub fn cumulative(&self) -> [u64; N] {
        let mut below = 0;
        self.in_bucket.map(|n| {
            below += n;
            below
        })
    }

    /// Every observation (the `+Inf` bucket and `_count`).
    pub fn count(&self) -> u64 {
        self.count
    }

    /// The observations' sum, added in the order observed, from 0.
    pub fn sum(&self) -> f64 {
        self.sum
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_value_counts_in_the_lowest_bucket_at_or_above_it() {
        let h = Durations::of(
            &DURATION_BUCKETS,
            [0.0, 60.0, 60.5, 7200.0, 7200.5, f64::NAN],
        );
        assert_eq!(h.cumulative(), [2, 3, 3, 3, 3, 3, 3, 4]);
        assert_eq!(h.count(), 6, "above every bound and NaN count in all only");
        assert!(h.sum().is_nan());
        let runs = CiRuns::of(&CI_RUNS_BUCKETS, [1.0, 3.0, 3.0, 11.0]);
        assert_eq!((runs.cumulative(), runs.count()), ([1, 1, 3, 3, 3, 3], 4));
        assert_eq!(runs.sum(), 18.0);
    }

    #[test]
    fn observing_n_times_is_n_observations() {
        let mut once = Durations::default();
        once.observe_times(0.1, 3);
        assert_eq!(once, Durations::of(&DURATION_BUCKETS, [0.1, 0.1, 0.1]));
        assert_eq!(once.sum(), 0.1 + 0.1 + 0.1);
    }

    #[test]
    fn adding_two_histograms_adds_their_counts_and_sums() {
        let mut a = Durations::of(&DURATION_BUCKETS, [30.0, 4000.0]);
        a.add(&Durations::of(&DURATION_BUCKETS, [400.0, 9000.0]));
        assert_eq!(a.cumulative(), [1, 1, 2, 2, 2, 2, 3, 3]);
        assert_eq!((a.count(), a.sum()), (4, 13_430.0));
        assert_eq!(Durations::default().cumulative(), [0; 8]);
    }
}
