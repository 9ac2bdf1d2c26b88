//! The byte budget shared by every HTTP connection, and the rate limit of
//! the diagnostics that say a limit was hit.
//!
//! The reactor's HTTP front is the one owner of a [`Budget`]: each
//! connection tells it how many bytes it holds (unparsed input, the body of
//! the request being received or the length that request declared, queued
//! response bytes) whenever that changes, and a new request body is
//! admitted only if it fits in what is left. Nothing already admitted is
//! ever refused later, so the total may pass the limit (responses are never
//! dropped); it then only stops new bodies.
//!
//! [`Notices`] decides when a diagnostic line may be printed: at most one
//! per kind per period, with a count of the events it stood for.

use std::time::{Duration, Instant};

/// Default for `--max-buffered`: 256 MiB.
pub const DEFAULT_MAX_BUFFERED: usize = 256 * 1024 * 1024;

/// The bytes held across connections, against a limit.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Budget {
    limit: usize,
    used: usize,
}

impl Budget {
    /// An empty budget of `limit` bytes.
    pub fn new(limit: usize) -> Budget {
        Budget { limit, used: 0 }
    }

    pub fn limit(&self) -> usize {
        self.limit
    }

    /// Bytes held now, by every holder together.
    pub fn used(&self) -> usize {
        self.used
    }

    /// One holder's count changed from `old` to `new` (`new` 0 when it
    /// goes away). `old` must be what that holder reported last.
    pub fn update(&mut self, old: usize, new: usize) {
        self.used = self.used.saturating_sub(old).saturating_add(new);
    }

    /// Whether a new body of `length` bytes fits in what is left.
    pub fn admits(&self, length: u64) -> bool {
        let left = self.limit.saturating_sub(self.used) as u64;
        length <= left
    }

    /// Whether the holders together are past the limit.
    pub fn exceeded(&self) -> bool {
        self.used > self.limit
    }
}

/// The kinds of event reported on stderr, each rate-limited on its own.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Notice {
    /// A peer address reached its connection cap.
    PeerCap,
    /// Every connection slot is taken.
    ConnCap,
    /// A request body did not fit in the buffer budget.
    Budget,
    /// An owner's session cap made it drop one of its sessions.
    SessionCap,
}

impl Notice {
    fn index(self) -> usize {
        match self {
            Notice::PeerCap => 0,
            Notice::ConnCap => 1,
            Notice::Budget => 2,
            Notice::SessionCap => 3,
        }
    }
}

/// How often each kind of notice may be printed, unless changed.
pub const NOTICE_PERIOD: Duration = Duration::from_secs(10);

/// The rate limit of notices; see the module docs.
#[derive(Clone, Debug)]
pub struct Notices {
    period: Duration,
    /// Per kind: when a line was last printed, and the events since then
    /// that printed nothing.
    state: [(Option<Instant>, u64); 4],
}

impl Notices {
    pub fn new(period: Duration) -> Notices {
        Notices {
            period,
            state: [(None, 0); 4],
        }
    }

    /// An event of `kind` happened at `now`. Returns `Some(n)` when a line
    /// is due, `n` being the events of that kind since the last line that
    /// went unreported; `None` when this one is only counted.
    pub fn note(&mut self, kind: Notice, now: Instant) -> Option<u64> {
        let (last, suppressed) = &mut self.state[kind.index()];
        match last {
            Some(at) if now.saturating_duration_since(*at) < self.period => {
                *suppressed += 1;
                None
            }
            _ => {
                *last = Some(now);
                Some(std::mem::take(suppressed))
            }
        }
    }
}

/// The text appended to a notice that stands for `suppressed` more events.
pub fn suppressed_suffix(suppressed: u64, period: Duration) -> String {
    match suppressed {
        0 => String::new(),
        n => format!(
            " ({n} more in the last {} s not reported)",
            period.as_secs().max(1)
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accounting() {
        let mut budget = Budget::new(100);
        assert!(budget.admits(100));
        assert!(!budget.admits(101));
        budget.update(0, 60);
        budget.update(0, 30);
        assert_eq!(budget.used(), 90);
        assert!(budget.admits(10));
        assert!(!budget.admits(11));
        // A holder grows past the limit: nothing new fits, nothing is lost.
        budget.update(30, 50);
        assert_eq!(budget.used(), 110);
        assert!(budget.exceeded());
        assert!(!budget.admits(1));
        // Holders going away free their bytes.
        budget.update(60, 0);
        assert_eq!(budget.used(), 50);
        assert!(!budget.exceeded());
        assert!(budget.admits(50));
        budget.update(50, 0);
        assert_eq!(budget.used(), 0);
        // A huge declared length never wraps around.
        assert!(!budget.admits(u64::MAX));
    }

    #[test]
    fn notices_are_rate_limited_per_kind() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut notices = Notices::new(Duration::from_secs(10));
        assert_eq!(notices.note(Notice::PeerCap, at(0)), Some(0));
        assert_eq!(notices.note(Notice::PeerCap, at(1)), None);
        assert_eq!(notices.note(Notice::PeerCap, at(9_999)), None);
        // Another kind has its own clock.
        assert_eq!(notices.note(Notice::Budget, at(5)), Some(0));
        // The next line after the period counts what was held back.
        assert_eq!(notices.note(Notice::PeerCap, at(10_000)), Some(2));
        assert_eq!(notices.note(Notice::PeerCap, at(10_001)), None);
        assert_eq!(notices.note(Notice::PeerCap, at(30_000)), Some(1));
        assert_eq!(suppressed_suffix(0, NOTICE_PERIOD), "");
        assert_eq!(
            suppressed_suffix(3, NOTICE_PERIOD),
            " (3 more in the last 10 s not reported)"
        );
    }
}
