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
//! The table is pure: the caller passes the current `Instant` and the 16
//! random bytes of each new id. Sessions are kept in a hash map by id and in
//! an ordered map by last use, so lookups are O(1) and eviction and expiry
//! are O(log n) per session dropped, with no scan of the whole table.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::protocol::instance::InstanceId;

/// Default for [`SessionLimits::ttl`]: one hour, as in the reference server.
pub const DEFAULT_SESSION_TTL: Duration = Duration::from_secs(3600);

/// Default for [`SessionLimits::max_sessions`].
pub const DEFAULT_MAX_SESSIONS: usize = 10_000;

/// Bounds on the session table.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SessionLimits {
    /// A session unused for this long is gone.
    pub ttl: Duration,
    /// Most live sessions; creating one more drops the least recently used.
    /// 0 behaves like 1 (the new session is always kept).
    pub max_sessions: usize,
}

impl Default for SessionLimits {
    fn default() -> Self {
        SessionLimits {
            ttl: DEFAULT_SESSION_TTL,
            max_sessions: DEFAULT_MAX_SESSIONS,
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
}

impl Session {
    /// When the session was created or last touched.
    pub fn last_used(&self) -> Instant {
        self.last_used
    }
}

/// The session table; see the module docs.
#[derive(Clone, Debug)]
pub struct Sessions {
    limits: SessionLimits,
    /// The name every id of this table starts with.
    instance: InstanceId,
    by_id: HashMap<[u8; 16], Session>,
    /// INVARIANT: holds `(last_used, serial) -> id` for exactly the sessions
    /// in `by_id`, so its first entry is the least recently used.
    by_use: BTreeMap<(Instant, u64), [u8; 16]>,
    next_serial: u64,
}

impl Sessions {
    /// An empty table whose ids start with `instance`.
    pub fn new(limits: SessionLimits, instance: InstanceId) -> Self {
        Sessions {
            limits,
            instance,
            by_id: HashMap::new(),
            by_use: BTreeMap::new(),
            next_serial: 0,
        }
    }

    /// Creates a session whose id is the instance id, a dot and `random` as
    /// 32 lowercase hex digits, and returns the id. Expired sessions are dropped first, then the least
    /// recently used ones while the table is full. Returns `None`, changing
    /// nothing, if the id is already taken (only a broken random source does
    /// that); the caller then retries with fresh bytes.
    pub fn create(
        &mut self,
        random: [u8; 16],
        protocol_version: &str,
        now: Instant,
    ) -> Option<String> {
        if self.by_id.contains_key(&random) {
            return None;
        }
        self.sweep(now);
        while self.by_id.len() >= self.limits.max_sessions.max(1) {
            let Some((_, id)) = self.by_use.pop_first() else {
                break;
            };
            self.by_id.remove(&id);
        }
        let serial = self.next_serial();
        self.by_use.insert((now, serial), random);
        self.by_id.insert(
            random,
            Session {
                protocol_version: protocol_version.to_string(),
                initialized: false,
                log_level: None,
                last_used: now,
                serial,
            },
        );
        Some(self.instance.mint(&random))
    }

    /// The live session called `id`, without refreshing it. An expired
    /// session is removed and reported as unknown, like an id never issued.
    pub fn get(&mut self, id: &str, now: Instant) -> Option<&mut Session> {
        let key = self.instance.owns(id)?;
        let session = self.by_id.get(&key)?;
        if now.saturating_duration_since(session.last_used) >= self.limits.ttl {
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
        if self.get(id, now).is_none() {
            return false;
        }
        let serial = self.next_serial();
        let Some(session) = self.by_id.get_mut(&key) else {
            return false;
        };
        self.by_use.remove(&(session.last_used, session.serial));
        session.last_used = now;
        session.serial = serial;
        self.by_use.insert((now, serial), key);
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
        while let Some(entry) = self.by_use.first_entry() {
            let (last_used, _) = *entry.key();
            if now.saturating_duration_since(last_used) < self.limits.ttl {
                break;
            }
            let id = entry.remove();
            self.by_id.remove(&id);
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
        match self.by_id.remove(key) {
            Some(session) => {
                self.by_use.remove(&(session.last_used, session.serial));
                true
            }
            None => false,
        }
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
        let id = sessions.create(id_bytes(7), "v", start).unwrap();
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
        let id = sessions.create(id_bytes(1), "2025-06-18", start).unwrap();
        assert_eq!(id, "n1.ab000000000000000000000000000001");
        assert_eq!(
            sessions.create(id_bytes(1), "2025-06-18", start),
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
        let id = sessions.create(id_bytes(1), "v", start).unwrap();
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
        let id = sessions.create(id_bytes(2), "v", start).unwrap();
        assert!(!sessions.touch(&id, start + 2 * HOUR));
        assert_eq!(sessions.len(), 0);
        // A short TTL for tests.
        let mut sessions = table(SessionLimits {
            ttl: Duration::from_secs(5),
            ..SessionLimits::default()
        });
        let id = sessions.create(id_bytes(3), "v", start).unwrap();
        assert!(sessions.get(&id, start + Duration::from_secs(4)).is_some());
        assert!(sessions.get(&id, start + Duration::from_secs(5)).is_none());
    }

    #[test]
    fn sweep_drops_only_expired() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        for n in 0..10u8 {
            sessions
                .create(id_bytes(n), "v", start + Duration::from_secs(u64::from(n)))
                .unwrap();
        }
        assert_eq!(sessions.sweep(start + HOUR + Duration::from_secs(3)), 4);
        assert_eq!(sessions.len(), 6);
        assert!(sessions.get(&id_of(&id_bytes(3)), start + HOUR).is_none());
        assert!(sessions.get(&id_of(&id_bytes(4)), start + HOUR).is_some());
        // Creating sweeps too.
        sessions
            .create(id_bytes(100), "v", start + 2 * HOUR)
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
            .map(|n| sessions.create(id_bytes(n), "v", at(u64::from(n))).unwrap())
            .collect();
        assert!(sessions.touch(&ids[0], at(10)));
        let fourth = sessions.create(id_bytes(3), "v", at(11)).unwrap();
        assert_eq!(sessions.len(), 3);
        assert!(
            sessions.get(&ids[1], at(11)).is_none(),
            "least recently used goes first"
        );
        for id in [&ids[0], &ids[2], &fourth] {
            assert!(sessions.get(id, at(11)).is_some());
        }
        // A lookup does not count as use; a touch does.
        let fifth = sessions.create(id_bytes(4), "v", at(12)).unwrap();
        assert!(sessions.get(&ids[2], at(12)).is_none());
        assert!(sessions.get(&fifth, at(12)).is_some());
        // Same instant: creation order breaks the tie.
        let mut sessions = table(SessionLimits {
            max_sessions: 2,
            ..SessionLimits::default()
        });
        let a = sessions.create(id_bytes(0), "v", start).unwrap();
        let b = sessions.create(id_bytes(1), "v", start).unwrap();
        sessions.create(id_bytes(2), "v", start).unwrap();
        assert!(sessions.get(&a, start).is_none());
        assert!(sessions.get(&b, start).is_some());
        // A limit of 0 keeps the newest session.
        let mut sessions = table(SessionLimits {
            max_sessions: 0,
            ..SessionLimits::default()
        });
        let a = sessions.create(id_bytes(0), "v", start).unwrap();
        assert!(sessions.get(&a, start).is_some());
    }

    #[test]
    fn full_table_stays_fast_and_consistent() {
        let start = Instant::now();
        let mut sessions = table(SessionLimits::default());
        for n in 0..30_000u32 {
            let mut bytes = [0u8; 16];
            bytes[..4].copy_from_slice(&n.to_be_bytes());
            sessions
                .create(bytes, "v", start + Duration::from_millis(u64::from(n)))
                .unwrap();
        }
        assert_eq!(sessions.len(), DEFAULT_MAX_SESSIONS);
        assert_eq!(sessions.by_use.len(), DEFAULT_MAX_SESSIONS);
        let oldest = sessions.by_use.first_key_value().map(|(key, _)| key.0);
        assert_eq!(oldest, Some(start + Duration::from_millis(20_000)));
    }
}
