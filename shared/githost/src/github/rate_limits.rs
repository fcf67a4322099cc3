//! The waits GitHub asked for. GitHub's documentation asks clients to stop making requests
//! while they are rate-limited (continuing "may result in the banning of your integration"),
//! so once a call is refused for a rate limit, no call with the same token to the same API
//! (REST or GraphQL, whose primary limits are counted apart) is sent before the wait ends:
//! it fails at once, as the refused call did, with the wait that remains. The App's own
//! calls (installation lookups, installation tokens) are signed each with a fresh JWT and
//! held back together, as the App.
//!
//! The waits are kept for the life of the process, so a deployed function's next invocations
//! keep them too.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Which of GitHub's APIs a call is to.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Api {
    Rest,
    GraphQl,
}

/// Until when each token (or the App) may not call each API.
#[derive(Debug, Default)]
pub(crate) struct RateLimits {
    until: Mutex<HashMap<(String, Api), Instant>>,
}

impl RateLimits {
    /// How long `holder` (a token, or the App) must still wait before calling `api`, if it must.
    pub fn wait(&self, holder: &str, api: Api) -> Option<Duration> {
        let until = *self.lock().get(&(holder.to_owned(), api))?;
        let wait = until.saturating_duration_since(Instant::now());
        (!wait.is_zero()).then_some(wait)
    }

    /// Records that `holder` (a token, or the App) was refused `api` for `wait`. Waits already
    /// over are forgotten.
    pub fn refused(&self, holder: &str, api: Api, wait: Duration) {
        let now = Instant::now();
        let mut until = self.lock();
        until.retain(|_, until| *until > now);
        let entry = until.entry((holder.to_owned(), api)).or_insert(now);
        *entry = (*entry).max(now + wait);
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<(String, Api), Instant>> {
        self.until.lock().unwrap_or_else(|e| e.into_inner())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_holds_back_its_token_and_api_only() {
        let limits = RateLimits::default();
        limits.refused("one", Api::Rest, Duration::from_secs(600));
        let wait = limits.wait("one", Api::Rest).unwrap();
        assert!(wait > Duration::from_secs(590) && wait <= Duration::from_secs(600));
        assert_eq!(limits.wait("one", Api::GraphQl), None);
        assert_eq!(limits.wait("two", Api::Rest), None);
    }

    #[test]
    fn a_shorter_refusal_does_not_shorten_a_longer_wait() {
        let limits = RateLimits::default();
        limits.refused("one", Api::Rest, Duration::from_secs(600));
        limits.refused("one", Api::Rest, Duration::from_secs(1));
        assert!(limits.wait("one", Api::Rest).unwrap() > Duration::from_secs(590));
    }

    #[test]
    fn a_wait_that_is_over_is_no_wait() {
        let limits = RateLimits::default();
        limits.refused("one", Api::Rest, Duration::ZERO);
        assert_eq!(limits.wait("one", Api::Rest), None);
        limits.refused("two", Api::Rest, Duration::from_secs(1));
        assert_eq!(
            limits.lock().len(),
            1,
            "the wait that was over is forgotten"
        );
    }
}
