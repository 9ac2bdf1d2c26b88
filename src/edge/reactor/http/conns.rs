//! The open connections by token, and their timers.
//!
//! A connection's next deadline follows from its state (idle, reading a
//! request, streaming, lingering: `Conn::deadline`), which changes only
//! through `get_mut`, `insert` or `remove` here. Those note the token; the
//! timers are brought up to date for the noted tokens alone before the
//! loop asks for its next wake-up or for what is due, so a turn never
//! walks every connection.

use std::time::Instant;

use mio::Token;

use super::conn::{Conn, Due, Timeouts};
use crate::edge::reactor::idhash::IdMap;
use crate::edge::reactor::timers::Timers;

#[derive(Default)]
pub(super) struct Conns {
    map: IdMap<Token, Conn>,
    /// Connections changed since their timer was last armed.
    touched: Vec<Token>,
    timers: Timers<Token>,
}

impl Conns {
    pub(super) fn get(&self, token: &Token) -> Option<&Conn> {
        self.map.get(token)
    }

    /// The connection, to change: its timer is armed again before the next
    /// wake-up.
    pub(super) fn get_mut(&mut self, token: &Token) -> Option<&mut Conn> {
        let conn = self.map.get_mut(token)?;
        // A connection is mostly changed several times in a row.
        if self.touched.last() != Some(token) {
            self.touched.push(*token);
        }
        Some(conn)
    }

    pub(super) fn insert(&mut self, token: Token, conn: Conn) {
        self.map.insert(token, conn);
        self.touched.push(token);
    }

    pub(super) fn remove(&mut self, token: &Token) -> Option<Conn> {
        self.timers.set(*token, None);
        self.map.remove(token)
    }

    pub(super) fn len(&self) -> usize {
        self.map.len()
    }

    pub(super) fn contains_key(&self, token: &Token) -> bool {
        self.map.contains_key(token)
    }

    pub(super) fn values(&self) -> impl Iterator<Item = &Conn> {
        self.map.values()
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = (&Token, &Conn)> {
        self.map.iter()
    }

    /// Arms the timers of the connections changed since last time. A
    /// timer armed earlier than a connection's deadline stays (`due`
    /// finds nothing due then and arms it again), so a request that moves
    /// the idle deadline on touches no heap.
    fn rearm(&mut self, timeouts: Timeouts) {
        for token in self.touched.drain(..) {
            let at = self.map.get(&token).and_then(|c| c.deadline(timeouts));
            self.timers.set_no_later(token, at);
        }
    }

    /// The earliest deadline of any connection.
    pub(super) fn next_deadline(&mut self, timeouts: Timeouts) -> Option<Instant> {
        self.rearm(timeouts);
        self.timers.next()
    }

    /// The connections with something due at `now`, and what.
    pub(super) fn due(&mut self, now: Instant, timeouts: Timeouts) -> Vec<(Token, Due)> {
        self.rearm(timeouts);
        let mut due = Vec::new();
        while let Some(token) = self.timers.pop_due(now) {
            let Some(conn) = self.map.get(&token) else {
                continue;
            };
            match conn.due(now, timeouts) {
                // Armed early: arm it again for when it is due.
                Due::Nothing => self.touched.push(token),
                what => due.push((token, what)),
            }
        }
        due
    }
}
