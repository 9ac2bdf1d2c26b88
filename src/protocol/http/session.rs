//! The table of MCP sessions named by the `Mcp-Session-Id` header.
//!
//! A session is minted by `initialize` and then names the handshake state of
//! one client. Sessions end when deleted, when idle past a time-to-live
//! (checked on every lookup, so a stale id is unknown at once), or when the
//! table is full and a new one needs room (least recently used first).
//!
//! Ids have the form `NAME.<32 hex digits>` (`instance::InstanceId::mint`),
//! so a load balancer can send a session's requests to the instance that
//! holds it; an id carrying another instance's name is unknown here.
//!
//! Each session has an *owner*, the caller's name for who created it (the
//! bearer token, else the peer address). An owner holds at most
//! `max_per_owner` sessions: its next one drops its own least recently used.
//! When the whole table is full, the least recently used session of the
//! owner holding the most goes, so an owner can only push out its own
//! sessions, or those of an owner holding at least as many.
//!
//! The table is pure: the caller passes the current `Instant` and the 16
//! random bytes of each new id. Sessions are kept in a hash map by id and in
//! ordered maps by last use (all of them, and per owner), so lookups are
//! O(1) and eviction and expiry are O(log n) per session dropped, with no
//! scan of the whole table.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::hash::{BuildHasherDefault, Hasher};
use std::time::{Duration, Instant};

use crate::protocol::instance::InstanceId;

/// Default for [`SessionLimits::ttl`]: one hour, as in the reference server.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(3600);

/// Default for [`SessionLimits::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// Default for [`SessionLimits::max_per_owner`] (`--max-sessions-per-owner`).
pub const DEFAULT_MAX_SESSIONS_PER_OWNER: usize = 1_000;

/// Bounds on the session table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// A session unused for this long is gone.
    pub ttl: Duration,
    /// Most live sessions; creating one more drops the least recently used
    /// session of the owner holding the most. 0 behaves like 1 (the new
    /// session is always kept).
    pub max_sessions: usize,
    /// Most live sessions of one owner; creating one more drops that owner's
    /// least recently used. 0 behaves like 1.
    pub max_per_owner: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            ttl: DEFAULT_SESSION_TTL,
            max_sessions: DEFAULT_MAX_SESSIONS,
            max_per_owner: DEFAULT_MAX_SESSIONS_PER_OWNER,
        }
    }
}

/// The state kept for one session.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Session {
    /// The protocol version agreed in `initialize`.
    pub protocol_version: String,
    /// Whether `notifications/initialized` has arrived.
    pub initialized: bool,
    /// The level set by `logging/setLevel` (an index into the MCP levels).
    pub log_level: Option<usize>,
    last_used: Instant,
    /// Tie-breaker making the key in `Sessions::by_use` unique.
    serial: u64,
    owner: String,
}

impl Session {
    /// When the session was created or last touched.
    pub fn last_used(&self) -> Instant {
        self.last_used
    }

    /// Who created the session (see `Sessions::create`).
    pub fn owner(&self) -> &str {
        &self.owner
    }
}

/// What [`Sessions::create`] did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Created {
    /// The new session's id.
    pub id: String,
    /// Sessions of the same owner dropped for its per-owner cap.
    pub evicted_own: usize,
    /// Sessions dropped because the table was full (of the largest owner).
    pub evicted_full: usize,
}

/// The session table; see the module docs.
#[derive(Clone, Debug)]
pub struct Sessions {
    limits: SessionLimits,
    /// The name every id of this table starts with.
    instance: InstanceId,
    by_id: HashMap<[u8; 16], Session, BuildHasherDefault<RandomKeyHasher>>,
    /// INVARIANT: holds `(last_used, serial) -> id` for exactly the sessions
    /// in `by_id`, so its first entry is the least recently used.
    by_use: BTreeMap<(Instant, u64), [u8; 16]>,
    /// The same per owner. INVARIANT: no empty map is kept.
    by_owner: HashMap<String, BTreeMap<(Instant, u64), [u8; 16]>>,
    /// `(number of sessions, owner)` for every owner in `by_owner`, so the
    /// last entry is the owner holding the most.
    by_size: BTreeSet<(usize, String)>,
    next_serial: u64,
}

/// The hasher of the table's keys: they are the random bytes of session
/// ids drawn by the server (a client can look an id up, never place one),
/// so their own bits spread them and no keyed hash is needed.
#[derive(Default)]
struct RandomKeyHasher(u64);

impl Hasher for RandomKeyHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.0 = self.0.rotate_left(29) ^ u64::from_le_bytes(word);
        }
    }

    fn finish(&self) -> u64 {
        self.0
    }
}

impl Sessions {
    /// An empty table whose ids start with `instance`.
    pub fn new(limits: SessionLimits, instance: InstanceId) -> Self {
        Sessions {
            limits,
            instance,
            by_id: HashMap::default(),
            by_use: BTreeMap::new(),
            by_owner: HashMap::new(),
            by_size: BTreeSet::new(),
            next_serial: 0,
        }
    }

    /// Creates a session of `owner` whose id is the instance id, a dot and
    /// `random` as 32 lowercase hex digits. Expired sessions are dropped
    /// first, then the owner's least recently used ones while it is at its
    /// cap, then those of the owner holding the most while the table is
    /// full. Returns `None`, changing nothing, if the id is already taken
    /// (only a broken random source does that); the caller then retries with
    /// fresh bytes.
    pub fn create(
        &mut self,
        random: [u8; 16],
        protocol_version: &str,
        owner: &str,
        now: Instant,
    ) -> Option<Created> {
        if self.by_id.contains_key(&random) {
            return None;
        }
        self.sweep(now);
        let mut evicted_own = 0;
        while self.owned(owner) >= self.limits.max_per_owner.max(1) {
            let Some(id) = self.oldest_of(owner) else {
                break;
            };
            self.remove_key(&id);
            evicted_own += 1;
        }
        let mut evicted_full = 0;
        while self.by_id.len() >= self.limits.max_sessions.max(1) {
            let Some((_, largest)) = self.by_size.last() else {
                break;
            };
            let Some(id) = self.oldest_of(&largest.clone()) else {
                break;
            };
            self.remove_key(&id);
            evicted_full += 1;
        }
        let serial = self.next_serial();
        self.by_use.insert((now, serial), random);
        let n = self.owned(owner);
        self.by_size.remove(&(n, owner.to_string()));
        self.by_size.insert((n + 1, owner.to_string()));
        self.by_owner
            .entry(owner.to_string())
            .or_default()
            .insert((now, serial), random);
        self.by_id.insert(
            random,
            Session {
                protocol_version: protocol_version.to_string(),
                initialized: false,
                log_level: None,
                last_used: now,
                serial,
                owner: owner.to_string(),
            },
        );
        Some(Created {
            id: self.instance.mint(&random),
            evicted_own,
            evicted_full,
        })
    }

    /// How many sessions `owner` holds.
    pub fn owned(&self, owner: &str) -> usize {
        self.by_owner.get(owner).map_or(0, BTreeMap::len)
    }

    fn oldest_of(&self, owner: &str) -> Option<[u8; 16]> {
        let order = self.by_owner.get(owner)?;
        order.first_key_value().map(|(_, id)| *id)
    }

    /// The live session called `id`, without refreshing it. An expired
    /// session is removed and reported as unknown, like an id never issued.
    pub fn get(&mut self, id: &str, now: Instant) -> Option<&mut Session> {
        let key = self.instance.owns(id)?;
        let ttl = self.limits.ttl;
        let live = |s: &Session| now.saturating_duration_since(s.last_used) < ttl;
        if !self.by_id.get(&key).is_some_and(live) {
            self.remove_key(&key);
            return None;
        }
        self.by_id.get_mut(&key)
    }

    /// Marks the live session `id` as used at `now`. Returns false (and
    /// removes it, if expired) when there is no such live session.
    pub fn touch(&mut self, id: &str, now: Instant) -> bool {
        let Some(key) = self.instance.owns(id) else {
            return false;
        };
        let serial = self.next_serial + 1;
        let ttl = self.limits.ttl;
        let session = match self.by_id.get_mut(&key) {
            Some(s) if now.saturating_duration_since(s.last_used) < ttl => s,
            Some(_) => {
                self.remove_key(&key);
                return false;
            }
            None => return false,
        };
        self.next_serial = serial;
        let old = (session.last_used, session.serial);
        self.by_use.remove(&old);
        session.last_used = now;
        session.serial = serial;
        self.by_use.insert((now, serial), key);
        if let Some(order) = self.by_owner.get_mut(&session.owner) {
            order.remove(&old);
            order.insert((now, serial), key);
        }
        true
    }

    /// Ends session `id` (DELETE). Returns whether it existed.
    pub fn remove(&mut self, id: &str) -> bool {
        self.instance
            .owns(id)
            .is_some_and(|key| self.remove_key(&key))
    }

    /// Drops every session idle for the TTL or longer and returns how many.
    /// [`Sessions::create`] does this itself; call it from a timer to free
    /// memory sooner.
    pub fn sweep(&mut self, now: Instant) -> usize {
        let mut n_dropped = 0;
        while let Some((&(last_used, _), &id)) = self.by_use.first_key_value() {
            if now.saturating_duration_since(last_used) < self.limits.ttl {
                break;
            }
            self.remove_key(&id);
            n_dropped += 1;
        }
        n_dropped
    }

    /// How many sessions are stored (expired ones not yet swept included).
    pub fn len(&self) -> usize {
        self.by_id.len()
    }

    /// Whether no session is stored.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    fn remove_key(&mut self, key: &[u8; 16]) -> bool {
        let Some(session) = self.by_id.remove(key) else {
            return false;
        };
        let at = (session.last_used, session.serial);
        self.by_use.remove(&at);
        let n = self.owned(&session.owner);
        if let Some(order) = self.by_owner.get_mut(&session.owner) {
            order.remove(&at);
            if order.is_empty() {
                self.by_owner.remove(&session.owner);
            }
        }
        self.by_size.remove(&(n, session.owner.clone()));
        if n > 1 {
            self.by_size.insert((n - 1, session.owner));
        }
        true
    }

    fn next_serial(&mut self) -> u64 {
        self.next_serial += 1;
        self.next_serial
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: Duration = Duration::from_secs(3600);

    fn id_bytes(n: u8) -> [u8; 16] {
        let mut bytes = [0u8; 16];
        bytes[0] = 0xab;
        bytes[15] = n;
        bytes
    }

    fn table(limits: SessionLimits) -> Sessions {
        Sessions::new(limits, InstanceId::parse("n1").unwrap())
    }

    fn id_of(bytes: &[u8; 16]) -> String {
        InstanceId::parse("n1").unwrap().mint(bytes)
    }

    #[test]
    fn ids_carry_the_instance_and_others_are_unknown() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        let id = sessions.create(id_bytes(7), "v", "o", start).unwrap().id;
        assert_eq!(id, "n1.ab000000000000000000000000000007");
        assert!(sessions.get(&id, start).is_some());
        // The same random part under another instance's name is not ours.
        let mut other = Sessions::new(SessionLimits::default(), InstanceId::parse("n2").unwrap());
        assert!(other.get(&id, start).is_none());
        assert!(!other.touch(&id, start));
        assert!(!other.remove(&id));
        for bad in [
            "ab000000000000000000000000000007",
            "n2.ab000000000000000000000000000007",
            "n1.AB000000000000000000000000000007",
            "n1ab000000000000000000000000000007",
        ] {
            assert!(sessions.get(bad, start).is_none(), "{bad:?}");
        }
    }

    #[test]
    fn lifecycle() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        let id = sessions
            .create(id_bytes(1), "2025-06-18", "o", start)
            .unwrap()
            .id;
        assert_eq!(id, "n1.ab000000000000000000000000000001");
        assert_eq!(
            sessions.create(id_bytes(1), "2025-06-18", "o", start),
            None,
            "ids are unique"
        );
        let session = sessions.get(&id, start).unwrap();
        assert_eq!(
            (session.protocol_version.as_str(), session.initialized),
            ("2025-06-18", false)
        );
        session.initialized = true;
        assert!(sessions.get(&id, start).unwrap().initialized);
        assert!(sessions
            .get("n1.ab000000000000000000000000000002", start)
            .is_none());
        assert!(sessions.get("not an id", start).is_none());
        assert!(sessions.remove(&id));
        assert!(!sessions.remove(&id));
        assert!(sessions.get(&id, start).is_none());
        assert!(!sessions.touch(&id, start));
        assert!(sessions.is_empty());
    }

    #[test]
    fn idle_expiry() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        let id = sessions.create(id_bytes(1), "v", "o", start).unwrap().id;
        // Touching moves the deadline; a lookup alone does not.
        assert!(sessions.get(&id, start + HOUR / 2).is_some());
        assert!(sessions.touch(&id, start + HOUR / 2));
        assert_eq!(
            sessions.get(&id, start + HOUR).map(|s| s.last_used()),
            Some(start + HOUR / 2)
        );
        let last_moment = start + HOUR / 2 + HOUR - Duration::from_nanos(1);
        assert!(sessions.get(&id, last_moment).is_some());
        // Expired sessions are unknown and gone, checked on every lookup.
        assert!(sessions.get(&id, start + HOUR / 2 + HOUR).is_none());
        assert_eq!(sessions.len(), 0);
        let id = sessions.create(id_bytes(2), "v", "o", start).unwrap().id;
        assert!(!sessions.touch(&id, start + 2 * HOUR));
        assert_eq!(sessions.len(), 0);
        // A short TTL for tests.
        let mut sessions = table(SessionLimits {
            ttl: Duration::from_secs(5),
            ..SessionLimits::default()
        });
        let id = sessions.create(id_bytes(3), "v", "o", start).unwrap().id;
        assert!(sessions.get(&id, start + Duration::from_secs(4)).is_some());
        assert!(sessions.get(&id, start + Duration::from_secs(5)).is_none());
    }

    #[test]
    fn sweep_drops_only_expired() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        for n in 0..10u8 {
            sessions
                .create(
                    id_bytes(n),
                    "v",
                    "o",
                    start + Duration::from_secs(u64::from(n)),
                )
                .unwrap();
        }
        assert_eq!(sessions.sweep(start + HOUR + Duration::from_secs(3)), 4);
        assert_eq!(sessions.len(), 6);
        assert!(sessions.get(&id_of(&id_bytes(3)), start + HOUR).is_none());
        assert!(sessions.get(&id_of(&id_bytes(4)), start + HOUR).is_some());
        // Creating sweeps too.
        sessions
            .create(id_bytes(100), "v", "o", start + 2 * HOUR)
            .unwrap();
        assert_eq!(sessions.len(), 1);
    }

    #[test]
    fn least_recently_used_is_dropped_when_full() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut sessions = table(SessionLimits {
            max_sessions: 3,
            ..SessionLimits::default()
        });
        let ids: Vec<String> = (0..3)
            .map(|n| {
                sessions
                    .create(id_bytes(n), "v", "o", at(u64::from(n)))
                    .unwrap()
                    .id
            })
            .collect();
        assert!(sessions.touch(&ids[0], at(10)));
        let fourth = sessions.create(id_bytes(3), "v", "o", at(11)).unwrap().id;
        assert_eq!(sessions.len(), 3);
        assert!(
            sessions.get(&ids[1], at(11)).is_none(),
            "least recently used goes first"
        );
        for id in [&ids[0], &ids[2], &fourth] {
            assert!(sessions.get(id, at(11)).is_some());
        }
        // A lookup does not count as use; a touch does.
        let fifth = sessions.create(id_bytes(4), "v", "o", at(12)).unwrap().id;
        assert!(sessions.get(&ids[2], at(12)).is_none());
        assert!(sessions.get(&fifth, at(12)).is_some());
        // Same instant: creation order breaks the tie.
        let mut sessions = table(SessionLimits {
            max_sessions: 2,
            ..SessionLimits::default()
        });
        let a = sessions.create(id_bytes(0), "v", "o", start).unwrap().id;
        let b = sessions.create(id_bytes(1), "v", "o", start).unwrap().id;
        sessions.create(id_bytes(2), "v", "o", start).unwrap();
        assert!(sessions.get(&a, start).is_none());
        assert!(sessions.get(&b, start).is_some());
        // A limit of 0 keeps the newest session.
        let mut sessions = table(SessionLimits {
            max_sessions: 0,
            ..SessionLimits::default()
        });
        let a = sessions.create(id_bytes(0), "v", "o", start).unwrap().id;
        assert!(sessions.get(&a, start).is_some());
    }

    #[test]
    fn full_table_stays_fast_and_consistent() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        for n in 0..30_000u32 {
            let mut bytes = [0u8; 16];
            bytes[..4].copy_from_slice(&n.to_be_bytes());
            // Many owners, a few sessions each: only the total cap acts.
            let owner = format!("peer{}", n % 100);
            let at = start + Duration::from_millis(u64::from(n));
            sessions.create(bytes, "v", &owner, at).unwrap();
        }
        assert_eq!(sessions.len(), DEFAULT_MAX_SESSIONS);
        assert_eq!(sessions.by_owner.len(), 100);
        assert!(sessions.by_size.iter().all(|(n, _)| *n == 100));
        assert_eq!(sessions.by_use.len(), DEFAULT_MAX_SESSIONS);
        let oldest = sessions.by_use.first_key_value().map(|(key, _)| key.0);
        assert_eq!(oldest, Some(start + Duration::from_millis(20_000)));
    }

    #[test]
    fn an_owner_only_evicts_its_own() {
        let start = Instant::now();
        let at = |secs: u64| start + Duration::from_secs(secs);
        let mut sessions = table(SessionLimits {
            max_sessions: 10,
            max_per_owner: 4,
            ..SessionLimits::default()
        });
        let b = sessions.create(id_bytes(200), "v", "B", at(0)).unwrap();
        assert_eq!((b.evicted_own, b.evicted_full), (0, 0));
        // A creates many: at its cap it drops its own oldest, never B's.
        let mut a_ids = Vec::new();
        for n in 0..50u8 {
            let created = sessions.create(id_bytes(n), "v", "A", at(1 + u64::from(n)));
            let created = created.unwrap();
            assert_eq!(created.evicted_own, usize::from(n >= 4), "session {n}");
            assert_eq!(created.evicted_full, 0);
            a_ids.push(created.id);
        }
        assert!(sessions.get(&b.id, at(100)).is_some(), "B's session stays");
        assert_eq!(sessions.owned("A"), 4);
        assert_eq!(sessions.owned("B"), 1);
        assert!(sessions.get(&a_ids[45], at(100)).is_none());
        assert!(sessions.get(&a_ids[46], at(100)).is_some());
        // The table full: the owner holding the most gives one up, even
        // when another's session is the least recently used.
        for (n, owner) in ["C", "C", "C", "D", "D"].iter().enumerate() {
            let bytes = id_bytes(100 + n as u8);
            sessions.create(bytes, "v", owner, at(200)).unwrap();
        }
        assert_eq!(sessions.len(), 10);
        let e = sessions.create(id_bytes(150), "v", "E", at(300)).unwrap();
        assert_eq!((e.evicted_own, e.evicted_full), (0, 1));
        assert_eq!(sessions.owned("A"), 3, "A held the most");
        assert!(sessions.get(&b.id, at(300)).is_some());
        assert_eq!(sessions.len(), 10);
        // Removing keeps the per-owner books.
        assert!(sessions.remove(&b.id));
        assert_eq!(sessions.owned("B"), 0);
        assert!(!sessions.by_owner.contains_key("B"));
        let total: usize = sessions.by_size.iter().map(|(n, _)| n).sum();
        assert_eq!(total, sessions.len());
    }
}
