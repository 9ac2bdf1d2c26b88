//! The table of MCP sessions named by the `Mcp-Session-Id` header.
//!
//! A session is minted by `initialize` and then names the handshake state of
//! one client. Sessions end when deleted, when idle past a time-to-live
//! (checked on every lookup, so a stale id is unknown at once), or when the
//! table is full and a new one needs room (least recently used first).
//!
//! The table is pure: the caller passes the current `Instant` and the 16
//! random bytes of each new id. Sessions are kept in a hash map by id and in
//! an ordered map by last use, so lookups are O(1) and eviction and expiry
//! are O(log n) per session dropped, with no scan of the whole table.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

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
#[derive(Clone, Debug, Default)]
pub struct Sessions {
    limits: SessionLimits,
    by_id: HashMap<[u8; 16], Session>,
    /// INVARIANT: holds `(last_used, serial) -> id` for exactly the sessions
    /// in `by_id`, so its first entry is the least recently used.
    by_use: BTreeMap<(Instant, u64), [u8; 16]>,
    next_serial: u64,
}

impl Sessions {
    /// An empty table.
    pub fn new(limits: SessionLimits) -> Self {
        Sessions {
            limits,
            ..Sessions::default()
        }
    }

    /// Creates a session whose id is `random` as 32 lowercase hex digits and
    /// returns the id. Expired sessions are dropped first, then the least
    /// recently used ones while the table is full. Returns `None`, changing
    /// nothing, if the id is already taken (only a broken random source does
    /// that); the caller then retries with fresh bytes.
    pub fn create(&mut self, random: [u8; 16], protocol_version: &str, now: Instant) -> Option<String> {
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
                last_used: now,
                serial,
            },
        );
        Some(session_id_hex(&random))
    }

    /// The live session called `id`, without refreshing it. An expired
    /// session is removed and reported as unknown, like an id never issued.
    pub fn get(&mut self, id: &str, now: Instant) -> Option<&mut Session> {
        let key = parse_id(id)?;
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
        let Some(key) = parse_id(id) else {
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
        parse_id(id).is_some_and(|key| self.remove_key(&key))
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

/// `bytes` as 32 lowercase hex digits, the form of a session id.
pub fn session_id_hex(bytes: &[u8; 16]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The bytes of a session id; anything but 32 lowercase hex digits is an id
/// this table never issued.
fn parse_id(id: &str) -> Option<[u8; 16]> {
    let digits = id.as_bytes();
    if digits.len() != 32 {
        return None;
    }
    let nibble = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut key = [0u8; 16];
    for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(key)
}
