//! The queue of calls waiting for a pool process, and the rate limit of the
//! diagnostics the reactor prints about it. Pure bookkeeping: no I/O, times
//! are given by the caller.
//!
//! **Fairness.** Calls are served round-robin across *owners* (who asked:
//! a legacy HTTP session, an HTTP connection, the stdio client), and in
//! arrival order within one owner. Each call gets a tag `(round, seq)` when
//! it is queued: an owner's calls take consecutive rounds, starting no
//! earlier than the round being served, so in each round every owner with
//! calls waiting gets one turn, in the order their turn was taken. Ordering
//! by tag is a round-robin ring without walking one, and an owner that was
//! idle gets no credit for it. An owner whose last call was just served
//! has had its turn in this round: it is remembered until the round moves
//! on, so that its next call does not get a second turn in the same round.
//!
//! **Classes.** Calls that need the same pools (a class key, chosen by the
//! reactor) are interchangeable for readiness and leases, so each class
//! keeps its own ordered map and the reactor only ever looks at the head of
//! each class: the smallest tag among the heads is the next call in the
//! fair order. Queueing, popping and removing are `O(log n)`, so the work
//! per event does not grow with the number of calls waiting.
//!
//! **Bounds.** A cap on the calls one owner may have waiting, one on all
//! calls waiting (0: no cap), and a deadline per call (the queue timeout),
//! kept in a set ordered by time.

use std::collections::{BTreeMap, BTreeSet};
use std::hash::Hash;
use std::time::{Duration, Instant};

use super::idhash::IdMap;

/// The place of a call in the fair order: its round, then arrival.
type Tag = (u64, u64);

/// How many classes the queue keeps once they have no call waiting.
const KEPT_EMPTY_CLASSES: usize = 16;

/// Why a call was not queued.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Refused {
    /// Its owner already has `limit` calls waiting.
    Owner { limit: usize },
    /// `limit` calls are waiting in all.
    Total { limit: usize },
}

/// A queued call as the queue keeps it; given back by [`FairQueue::pop`]
/// so that a call that could not connect after all can have its place back
/// ([`FairQueue::restore`]).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct Entry<O, K> {
    pub(super) owner: O,
    pub(super) class: K,
    tag: Tag,
    pub(super) deadline: Option<Instant>,
}

#[derive(Debug, Default)]
struct OwnerState {
    /// The round this owner's next call takes (at least the current one).
    next_round: u64,
    queued: usize,
}

/// Calls waiting for a pool process, `I` their ids, `O` their owners and
/// `K` their classes.
#[derive(Debug)]
pub(super) struct FairQueue<I, O, K> {
    /// The round of the call that left the queue last.
    round: u64,
    seq: u64,
    per_owner: usize,
    total: usize,
    owners: IdMap<O, OwnerState>,
    classes: BTreeMap<K, BTreeMap<Tag, I>>,
    entries: IdMap<I, Entry<O, K>>,
    /// A call waiting alone, kept out of the ordered maps (most calls find
    /// a process at once and leave in the turn they came).
    /// INVARIANT: while it is set, `entries` (and so every map) is empty.
    lone: Option<(I, Entry<O, K>)>,
    deadlines: BTreeSet<(Instant, Tag)>,
    by_tag: IdMap<Tag, I>,
    /// Owners with nothing queued whose last call was served in the current
    /// round; forgotten when the round moves on.
    resting: Vec<O>,
}

impl<I, O, K> FairQueue<I, O, K>
where
    I: Copy + Eq + Hash,
    O: Clone + Eq + Hash,
    K: Clone + Ord,
{
    /// A queue refusing calls past `per_owner` waiting calls of one owner
    /// or `total` in all (0: no cap).
    pub(super) fn new(per_owner: usize, total: usize) -> Self {
        FairQueue {
            round: 0,
            seq: 0,
            per_owner,
            total,
            owners: IdMap::default(),
            classes: BTreeMap::new(),
            entries: IdMap::default(),
            lone: None,
            deadlines: BTreeSet::new(),
            by_tag: IdMap::default(),
            resting: Vec::new(),
        }
    }

    /// How many calls wait.
    pub(super) fn len(&self) -> usize {
        self.entries.len() + usize::from(self.lone.is_some())
    }

    /// How many calls of `owner` wait.
    pub(super) fn owner_len(&self, owner: &O) -> usize {
        self.owners.get(owner).map_or(0, |o| o.queued)
    }

    /// How many calls of `class` wait.
    pub(super) fn class_len(&self, class: &K) -> usize {
        if let Some((_, entry)) = &self.lone {
            return usize::from(entry.class == *class);
        }
        self.classes.get(class).map_or(0, BTreeMap::len)
    }

    fn contains(&self, id: I) -> bool {
        self.lone.as_ref().is_some_and(|(lone, _)| *lone == id) || self.entries.contains_key(&id)
    }

    /// Queues call `id` behind its owner's other calls, or refuses it at a
    /// cap. An id already queued keeps its place.
    pub(super) fn push(
        &mut self,
        id: I,
        owner: O,
        class: K,
        deadline: Option<Instant>,
    ) -> Result<(), Refused> {
        if self.contains(id) {
            return Ok(());
        }
        if self.total > 0 && self.len() >= self.total {
            return Err(Refused::Total { limit: self.total });
        }
        if self.per_owner > 0 && self.owner_len(&owner) >= self.per_owner {
            return Err(Refused::Owner {
                limit: self.per_owner,
            });
        }
        let state = self.owners.entry(owner.clone()).or_default();
        let round = state.next_round.max(self.round);
        state.next_round = round + 1;
        let tag = (round, self.seq);
        self.seq += 1;
        self.insert(
            id,
            Entry {
                owner,
                class,
                tag,
                deadline,
            },
        );
        Ok(())
    }

    /// Puts back a call taken out by [`FairQueue::pop`], at its old place
    /// and past the caps (it was admitted once).
    pub(super) fn restore(&mut self, id: I, entry: Entry<O, K>) {
        if !self.contains(id) {
            self.insert(id, entry);
        }
    }

    fn insert(&mut self, id: I, entry: Entry<O, K>) {
        self.owners.entry(entry.owner.clone()).or_default().queued += 1;
        if self.entries.is_empty() && self.lone.is_none() {
            self.lone = Some((id, entry));
            return;
        }
        if let Some((lone, lone_entry)) = self.lone.take() {
            self.insert_ordered(lone, lone_entry);
        }
        self.insert_ordered(id, entry);
    }

    /// Puts call `id` in the ordered maps (the one waiting alone goes
    /// there too once a second call waits).
    fn insert_ordered(&mut self, id: I, entry: Entry<O, K>) {
        // A class seen before keeps its (maybe empty) map: no key to clone
        // and no node to allocate for each call that passes through.
        match self.classes.get_mut(&entry.class) {
            Some(calls) => {
                calls.insert(entry.tag, id);
            }
            None => {
                self.classes
                    .insert(entry.class.clone(), BTreeMap::from([(entry.tag, id)]));
            }
        }
        if let Some(at) = entry.deadline {
            self.deadlines.insert((at, entry.tag));
        }
        self.by_tag.insert(entry.tag, id);
        self.entries.insert(id, entry);
    }

    /// Takes call `id` out of the queue (it ended or was cancelled): it
    /// was not served, so an owner left with nothing queued is forgotten.
    pub(super) fn remove(&mut self, id: I) -> Option<Entry<O, K>> {
        self.take_out(id, false)
    }

    fn take_out(&mut self, id: I, served: bool) -> Option<Entry<O, K>> {
        let entry = match self.lone.take() {
            Some((lone, entry)) if lone == id => entry,
            other => {
                self.lone = other;
                self.take_ordered(id)?
            }
        };
        if served {
            let round = self.round;
            self.round = round.max(entry.tag.0);
            if self.round > round {
                self.forget_resting();
            }
        }
        if let Some(state) = self.owners.get_mut(&entry.owner) {
            state.queued -= 1;
            if state.queued == 0 {
                if served && state.next_round > self.round {
                    self.resting.push(entry.owner.clone());
                } else {
                    // Nothing to remember: an idle owner gets no credit.
                    self.owners.remove(&entry.owner);
                }
            }
        }
        Some(entry)
    }

    /// Takes call `id` out of the ordered maps.
    fn take_ordered(&mut self, id: I) -> Option<Entry<O, K>> {
        let entry = self.entries.remove(&id)?;
        if let Some(calls) = self.classes.get_mut(&entry.class) {
            calls.remove(&entry.tag);
            // An emptied class is kept (`next` skips it) while there are
            // few: the next call of the class then allocates nothing here.
            if calls.is_empty() && self.classes.len() > KEPT_EMPTY_CLASSES {
                self.classes.remove(&entry.class);
            }
        }
        if let Some(at) = entry.deadline {
            self.deadlines.remove(&(at, entry.tag));
        }
        self.by_tag.remove(&entry.tag);
        Some(entry)
    }

    /// Forgets the owners with nothing queued whose turn is in the past.
    fn forget_resting(&mut self) {
        // Drained in place: the list keeps its room for the next round.
        let mut resting = std::mem::take(&mut self.resting);
        for owner in resting.drain(..) {
            if self
                .owners
                .get(&owner)
                .is_some_and(|s| s.queued == 0 && s.next_round <= self.round)
            {
                self.owners.remove(&owner);
            }
        }
        self.resting = resting;
    }

    /// The next call in the fair order among the classes `wanted` accepts:
    /// the class and the id of the head with the smallest tag.
    pub(super) fn next(&self, wanted: impl Fn(&K) -> bool) -> Option<(&K, I)> {
        if let Some((id, entry)) = &self.lone {
            return wanted(&entry.class).then_some((&entry.class, *id));
        }
        self.classes
            .iter()
            .filter(|(class, _)| wanted(class))
            .filter_map(|(class, calls)| calls.first_key_value().map(|(tag, id)| (tag, class, *id)))
            .min_by_key(|(tag, _, _)| **tag)
            .map(|(_, class, id)| (class, id))
    }

    /// Takes the head of `class` out of the queue, as the call that is
    /// served now (the current round moves on to its round).
    #[cfg(test)]
    pub(super) fn pop(&mut self, class: &K) -> Option<(I, Entry<O, K>)> {
        let id = match &self.lone {
            Some((id, entry)) => (entry.class == *class).then_some(*id)?,
            None => *self.classes.get(class)?.first_key_value()?.1,
        };
        let entry = self.serve(id)?;
        Some((id, entry))
    }

    /// Takes call `id`, the head of its class (as [`FairQueue::next`] gave
    /// it), out of the queue as the call that is served now (the current
    /// round moves on to its round).
    pub(super) fn serve(&mut self, id: I) -> Option<Entry<O, K>> {
        self.take_out(id, true)
    }

    /// The earliest queue deadline.
    pub(super) fn next_deadline(&self) -> Option<Instant> {
        let lone = self.lone.as_ref().and_then(|(_, entry)| entry.deadline);
        lone.or(self.deadlines.first().map(|(at, _)| *at))
    }

    /// Takes out every call whose deadline is `now` or earlier, oldest
    /// deadline first.
    pub(super) fn expire(&mut self, now: Instant) -> Vec<(I, Entry<O, K>)> {
        let mut gone = Vec::new();
        if let Some((id, entry)) = &self.lone {
            if entry.deadline.is_some_and(|at| at <= now) {
                let id = *id;
                if let Some(entry) = self.remove(id) {
                    gone.push((id, entry));
                }
            }
        }
        while let Some(&(at, tag)) = self.deadlines.first() {
            if at > now {
                break;
            }
            let Some(&id) = self.by_tag.get(&tag) else {
                self.deadlines.pop_first();
                continue;
            };
            if let Some(entry) = self.remove(id) {
                gone.push((id, entry));
            }
        }
        gone
    }
}

/// How often one kind of diagnostic may be printed.
pub(super) const LOG_EVERY: Duration = Duration::from_secs(10);

/// At most one line per kind per [`LOG_EVERY`]; the lines held back are
/// counted, and told with the next line of their kind or, once the window
/// has passed, on their own (`Throttle::flush`).
#[derive(Debug, Default)]
pub(super) struct Throttle {
    /// Per kind (a few names the server uses), in the kinds' order: when
    /// its last line went out and how many were held back since.
    kinds: Vec<(String, Instant, u64)>,
}

impl Throttle {
    /// Whether a line of `kind` may go out at `now`; if so, how many were
    /// held back since the last one.
    pub(super) fn allow(&mut self, kind: &str, now: Instant) -> Option<u64> {
        match self.kinds.binary_search_by(|(k, ..)| k.as_str().cmp(kind)) {
            Ok(i) => {
                let (_, last, held) = &mut self.kinds[i];
                if now.duration_since(*last) < LOG_EVERY {
                    *held += 1;
                    None
                } else {
                    let told = *held;
                    *last = now;
                    *held = 0;
                    Some(told)
                }
            }
            Err(i) => {
                self.kinds.insert(i, (kind.to_string(), now, 0));
                Some(0)
            }
        }
    }

    /// When lines held back are due to be counted.
    pub(super) fn next_flush(&self) -> Option<Instant> {
        self.kinds
            .iter()
            .filter(|(_, _, held)| *held > 0)
            .map(|(_, last, _)| *last + LOG_EVERY)
            .min()
    }

    /// The kinds whose window has passed with lines held back, and how
    /// many; their count starts again (a new window begins now).
    pub(super) fn flush(&mut self, now: Instant) -> Vec<(String, u64)> {
        let mut due = Vec::new();
        for (kind, last, held) in &mut self.kinds {
            if *held > 0 && now.duration_since(*last) >= LOG_EVERY {
                due.push((kind.clone(), *held));
                *held = 0;
                *last = now;
            }
        }
        due
    }
}

#[cfg(test)]
mod tests;
