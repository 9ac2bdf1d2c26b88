//! Deadlines in one structure: a min-heap of instants keyed by what is due
//! then, which the loop asks for its next wake-up and for what is due.
//!
//! Each key has at most one armed deadline. Setting a key's deadline again,
//! or cancelling it, does not search the heap: the map of armed deadlines is
//! the truth, and a heap entry that no longer matches it is dropped when it
//! reaches the top (or when stale entries outnumber live ones, by a
//! rebuild). So arming, cancelling and finding the next deadline cost
//! `O(log n)` amortized, and a turn touches only what is due, never every
//! call or connection.
//!
//! Also the wall clock of tasks and stored results ([`now_ms`]), a leaf
//! that `tasks`, `jobs` and `bigresults` share.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::marker::PhantomData;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use super::idhash::IdMap;

/// Milliseconds since the Unix epoch.
pub(super) fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

/// A key of [`Timers`]: its owner's type, packed losslessly into one word,
/// so every owner shares the one heap and map below (each typed copy of
/// them cost about 10 KB of the static binary).
pub(super) trait TimerKey: Copy {
    fn pack(self) -> u64;
    fn unpack(word: u64) -> Self;
}

impl TimerKey for u64 {
    fn pack(self) -> u64 {
        self
    }
    fn unpack(word: u64) -> u64 {
        word
    }
}

impl TimerKey for mio::Token {
    fn pack(self) -> u64 {
        self.0 as u64
    }
    fn unpack(word: u64) -> mio::Token {
        mio::Token(word as usize)
    }
}

/// The armed deadlines of keys `K` (see the module documentation): a thin
/// typed face on [`Deadlines`].
pub(super) struct Timers<K> {
    inner: Deadlines,
    key: PhantomData<K>,
}

impl<K> Default for Timers<K> {
    fn default() -> Timers<K> {
        Timers {
            inner: Deadlines::default(),
            key: PhantomData,
        }
    }
}

impl<K: TimerKey> Timers<K> {
    /// Arms `key` at `at`, replacing its deadline; `None` cancels it.
    pub(super) fn set(&mut self, key: K, at: Option<Instant>) {
        self.inner.set(key.pack(), at);
    }

    /// Arms `key` at `at` unless it is armed no later already (its owner
    /// checks what is due when it fires, and arms it again then); `None`
    /// leaves an armed deadline too. For deadlines that mostly move later.
    pub(super) fn set_no_later(&mut self, key: K, at: Option<Instant>) {
        self.inner.set_no_later(key.pack(), at);
    }

    /// The deadline armed for `key` (debug builds check owners' deadlines
    /// with it).
    #[cfg(any(test, debug_assertions))]
    pub(super) fn get(&self, key: &K) -> Option<Instant> {
        self.inner.armed.get(&key.pack()).map(|(at, _)| *at)
    }

    /// The earliest armed deadline.
    pub(super) fn next(&mut self) -> Option<Instant> {
        self.inner.next()
    }

    /// The next key due at `now` (its deadline is disarmed), if any.
    pub(super) fn pop_due(&mut self, now: Instant) -> Option<K> {
        self.inner.pop_due(now).map(K::unpack)
    }
}

/// The deadlines of packed keys, shared by every [`Timers`].
#[derive(Default)]
struct Deadlines {
    /// Every deadline armed, stale ones included: (when, arming number, key).
    heap: BinaryHeap<Reverse<(Instant, u64, u64)>>,
    /// The live deadline of each armed key and its arming number.
    armed: IdMap<u64, (Instant, u64)>,
    /// Numbers the armings, so a re-armed key's old entry is told apart.
    seq: u64,
    /// The heap's top is known to be live (nothing was armed, cancelled
    /// or popped since it was checked), so asking again costs no lookup.
    top_live: bool,
}

impl Deadlines {
    fn set(&mut self, key: u64, at: Option<Instant>) {
        let Some(at) = at else {
            if self.armed.remove(&key).is_some() {
                self.top_live = false;
            }
            return;
        };
        if self.armed.get(&key).is_some_and(|(t, _)| *t == at) {
            return;
        }
        self.top_live = false;
        self.seq += 1;
        self.armed.insert(key, (at, self.seq));
        self.heap.push(Reverse((at, self.seq, key)));
        if self.heap.len() > 2 * self.armed.len() + 64 {
            self.rebuild();
        }
    }

    fn set_no_later(&mut self, key: u64, at: Option<Instant>) {
        let Some(at) = at else {
            return;
        };
        if self.armed.get(&key).is_some_and(|(t, _)| *t <= at) {
            return;
        }
        self.set(key, Some(at));
    }

    fn next(&mut self) -> Option<Instant> {
        self.drop_stale();
        self.heap.peek().map(|Reverse((at, _, _))| *at)
    }

    fn pop_due(&mut self, now: Instant) -> Option<u64> {
        self.drop_stale();
        let Reverse((at, _, key)) = *self.heap.peek()?;
        if at > now {
            return None;
        }
        self.heap.pop();
        self.armed.remove(&key);
        self.top_live = false;
        Some(key)
    }

    /// Pops the heap's top while it is an entry no longer armed.
    fn drop_stale(&mut self) {
        if self.top_live {
            return;
        }
        while let Some(Reverse((at, seq, key))) = self.heap.peek() {
            if self.armed.get(key) == Some(&(*at, *seq)) {
                self.top_live = true;
                return;
            }
            self.heap.pop();
        }
    }

    /// Keeps only the live entries.
    fn rebuild(&mut self) {
        self.heap = self
            .armed
            .iter()
            .map(|(key, (at, seq))| Reverse((*at, *seq, *key)))
            .collect();
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[test]
    fn keys_come_due_in_deadline_order_and_cancelled_ones_never() {
        let t0 = Instant::now();
        let at = |ms| Some(t0 + Duration::from_millis(ms));
        let mut timers = Timers::default();
        timers.set(1u64, at(30));
        timers.set(2, at(10));
        timers.set(3, at(20));
        timers.set(2, at(40)); // re-armed later
        timers.set(3, None); // cancelled
        assert_eq!(timers.next(), at(30));
        assert_eq!(timers.get(&2), at(40));
        assert_eq!(timers.pop_due(t0 + Duration::from_millis(35)), Some(1));
        assert_eq!(timers.pop_due(t0 + Duration::from_millis(35)), None);
        assert_eq!(timers.pop_due(t0 + Duration::from_millis(45)), Some(2));
        assert_eq!(timers.next(), None);
        assert_eq!(timers.get(&1), None);
    }

    #[test]
    fn a_top_checked_once_is_still_dropped_when_cancelled_or_re_armed() {
        let t0 = Instant::now();
        let at = |ms| Some(t0 + Duration::from_millis(ms));
        let mut timers = Timers::default();
        timers.set(1u64, at(10));
        timers.set(2, at(20));
        assert_eq!(timers.next(), at(10));
        assert_eq!(timers.next(), at(10), "asked again");
        timers.set(1, None);
        assert_eq!(timers.next(), at(20));
        timers.set(2, at(40));
        assert_eq!(timers.next(), at(40));
        timers.set(3, at(5));
        assert_eq!(timers.pop_due(t0 + Duration::from_millis(50)), Some(3));
        assert_eq!(timers.next(), at(40));
        assert_eq!(timers.pop_due(t0 + Duration::from_millis(50)), Some(2));
        assert_eq!(timers.next(), None);
    }

    #[test]
    fn a_deadline_armed_no_later_stays_earlier_ones() {
        let t0 = Instant::now();
        let at = |ms| Some(t0 + Duration::from_millis(ms));
        let mut timers = Timers::default();
        timers.set_no_later(1u64, at(10));
        timers.set_no_later(1, at(30));
        timers.set_no_later(1, None);
        assert_eq!(timers.get(&1), at(10), "the earlier one stays");
        timers.set_no_later(1, at(5));
        assert_eq!(timers.get(&1), at(5), "an earlier one replaces it");
        assert_eq!(timers.pop_due(t0 + Duration::from_millis(5)), Some(1));
        timers.set_no_later(1, at(30));
        assert_eq!(timers.next(), at(30), "armed again once due");
    }

    #[test]
    fn a_token_packs_into_one_word_and_back() {
        let token = mio::Token(usize::MAX >> 1);
        assert_eq!(mio::Token::unpack(token.pack()), token);
    }

    #[test]
    fn re_arming_many_times_keeps_the_heap_small() {
        let t0 = Instant::now();
        let mut timers = Timers::default();
        for n in 0..10_000u64 {
            timers.set(n % 3, Some(t0 + Duration::from_millis(n)));
        }
        assert!(
            timers.inner.heap.len() <= 2 * 3 + 64 + 1,
            "{}",
            timers.inner.heap.len()
        );
        assert_eq!(timers.next(), Some(t0 + Duration::from_millis(9_997)));
    }
}
