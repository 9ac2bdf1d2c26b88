//! The client addresses of the open connections: how many connections each
//! holds (`--max-conns-per-peer`) and how many answer bytes wait unread on
//! them (`--max-unread-per-conn`, `--max-unread-per-peer`).
//!
//! Backpressure: a connection whose own unread answers, or whose address's,
//! are past their bound is paused: it is not read and none of its buffered
//! requests is started, so a client that stops reading starts no new work
//! and its kernel buffers fill. It resumes once below (its own output
//! draining wakes it; the address dropping below its bound wakes every
//! paused connection of that address). The shared budget (`--max-buffered`)
//! counts an address's unread answers up to its bound only: past it the
//! address can start nothing new, and what its running calls still answer
//! cannot lock other addresses out.

use std::collections::HashMap;
use std::net::IpAddr;

use mio::Token;

use crate::protocol::http::Budget;

/// A connection's answers not yet sent: all their bytes (what the bounds
/// on unread answers count) and, of them, those held in its queue (what the
/// budget counts: a stored value streamed from its table is held there
/// once, whoever reads it).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(super) struct Unread {
    pub(super) bytes: usize,
    pub(super) held: usize,
}

/// One client address.
#[derive(Default)]
struct Peer {
    conns: usize,
    /// Answer bytes queued on its connections (as last counted).
    unread: usize,
    /// Of them, bytes held in the connections' queues.
    held: usize,
    /// Its connections paused since it last dropped below its bound.
    paused: Vec<Token>,
}

/// The addresses, their bounds, and what backpressure did (for `/metrics`).
pub(super) struct Peers {
    map: HashMap<IpAddr, Peer>,
    /// How many addresses are past their bound of unread answers: while
    /// none is, `over` looks no address up.
    n_over: usize,
    /// `--max-conns-per-peer`; 0 for no cap.
    max_conns: usize,
    /// `--max-unread-per-conn`.
    per_conn: usize,
    /// `--max-unread-per-peer`.
    per_peer: usize,
    /// Connections paused now.
    paused_now: usize,
    /// Times a connection was paused, and notifications dropped.
    pauses: u64,
    dropped: u64,
    /// Paused connections whose address dropped below its bound, to pump.
    woken: Vec<Token>,
}

/// Backpressure's figures for `/metrics`.
pub(super) struct Pressure {
    pub(super) paused: usize,
    pub(super) pauses: u64,
    pub(super) dropped: u64,
    pub(super) unread: usize,
    pub(super) unread_peer_max: usize,
}

impl Peers {
    pub(super) fn new(max_conns: usize, per_conn: usize, per_peer: usize) -> Peers {
        Peers {
            map: HashMap::new(),
            n_over: 0,
            max_conns,
            per_conn: per_conn.max(1),
            per_peer: per_peer.max(1),
            paused_now: 0,
            pauses: 0,
            dropped: 0,
            woken: Vec::new(),
        }
    }

    /// `--max-conns-per-peer` (0: none).
    pub(super) fn max_conns(&self) -> usize {
        self.max_conns
    }

    /// Whether `ip` holds its cap of connections already.
    pub(super) fn at_cap(&self, ip: IpAddr) -> bool {
        let conns = self.map.get(&ip).map_or(0, |p| p.conns);
        self.max_conns > 0 && conns >= self.max_conns
    }

    /// A connection from `ip` opened.
    pub(super) fn open(&mut self, ip: IpAddr) {
        self.map.entry(ip).or_default().conns += 1;
    }

    /// A connection from `ip` closed, holding `unread` answers as last
    /// counted; `paused` if it was.
    pub(super) fn close(&mut self, ip: IpAddr, unread: Unread, paused: bool, budget: &mut Budget) {
        if paused {
            self.paused_now -= 1;
        }
        self.unread(ip, unread, Unread::default(), budget);
        if let Some(peer) = self.map.get_mut(&ip) {
            peer.conns -= 1;
            if peer.conns == 0 {
                if peer.unread > self.per_peer {
                    self.n_over -= 1;
                }
                self.map.remove(&ip);
            }
        }
    }

    /// A connection of `ip` now holds `new` unread answers instead of
    /// `old`: its address's count and the budget's share of it (what is
    /// held, up to the bound) follow. When the address drops below its
    /// bound, its paused connections are to be woken (`take_woken`).
    pub(super) fn unread(&mut self, ip: IpAddr, old: Unread, new: Unread, budget: &mut Budget) {
        if old == new {
            // Nothing moves (and nothing paused can be woken: an address
            // lists paused connections only while it is over its bound).
            return;
        }
        let cap = self.per_peer;
        let Some(peer) = self.map.get_mut(&ip) else {
            return;
        };
        let was_over = peer.unread > cap;
        peer.unread = peer
            .unread
            .saturating_sub(old.bytes)
            .saturating_add(new.bytes);
        match (was_over, peer.unread > cap) {
            (false, true) => self.n_over += 1,
            (true, false) => self.n_over -= 1,
            _ => {}
        }
        let before = peer.held;
        peer.held = before.saturating_sub(old.held).saturating_add(new.held);
        budget.update(before.min(cap), peer.held.min(cap));
        if peer.unread <= cap && !peer.paused.is_empty() {
            self.woken.append(&mut peer.paused);
        }
    }

    /// The paused connections to pump again.
    pub(super) fn take_woken(&mut self) -> Vec<Token> {
        std::mem::take(&mut self.woken)
    }

    /// Whether a connection of `ip` holding `unread` answer bytes is to be
    /// paused.
    pub(super) fn over(&self, ip: IpAddr, unread: usize) -> bool {
        unread > self.per_conn
            || (self.n_over > 0 && self.map.get(&ip).is_some_and(|p| p.unread > self.per_peer))
    }

    /// Connection `token` of `ip` is paused (`newly`: it was not). While
    /// its address is over its bound it is listed, to be woken when the
    /// address drops below (its own output draining wakes it otherwise).
    pub(super) fn paused(&mut self, ip: IpAddr, token: Token, newly: bool) {
        if newly {
            self.paused_now += 1;
            self.pauses += 1;
        }
        let per_peer = self.per_peer;
        if let Some(peer) = self.map.get_mut(&ip) {
            if peer.unread > per_peer && !peer.paused.contains(&token) {
                peer.paused.push(token);
            }
        }
    }

    /// A paused connection resumed.
    pub(super) fn resumed(&mut self) {
        self.paused_now -= 1;
    }

    /// A notification for a paused connection's stream was dropped.
    pub(super) fn dropped(&mut self) {
        self.dropped += 1;
    }

    pub(super) fn pressure(&self) -> Pressure {
        Pressure {
            paused: self.paused_now,
            pauses: self.pauses,
            dropped: self.dropped,
            unread: self.map.values().map(|p| p.unread).sum(),
            unread_peer_max: self.map.values().map(|p| p.unread).max().unwrap_or(0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    /// `bytes` unread, all of them held in the queue.
    fn both(bytes: usize) -> Unread {
        Unread { bytes, held: bytes }
    }

    fn none() -> Unread {
        Unread::default()
    }

    #[test]
    fn a_streamed_answer_counts_unread_but_only_its_held_bytes_in_the_budget() {
        let mut budget = Budget::new(1000);
        let mut peers = Peers::new(0, 100, 300);
        peers.open(ip(1));
        let streamed = Unread {
            bytes: 5000,
            held: 40,
        };
        peers.unread(ip(1), none(), streamed, &mut budget);
        assert_eq!(budget.used(), 40);
        assert!(peers.over(ip(1), 0), "the address is over its bound");
        assert_eq!(peers.pressure().unread, 5000);
        peers.close(ip(1), streamed, false, &mut budget);
        assert_eq!(budget.used(), 0);
    }

    #[test]
    fn the_budget_counts_an_address_up_to_its_bound() {
        let mut budget = Budget::new(1000);
        let mut peers = Peers::new(0, 100, 300);
        peers.open(ip(1));
        peers.open(ip(1));
        peers.unread(ip(1), none(), both(250), &mut budget);
        assert_eq!(budget.used(), 250);
        peers.unread(ip(1), none(), both(250), &mut budget);
        assert_eq!(budget.used(), 300, "only the bound counts");
        assert!(peers.over(ip(1), 0), "the address is over");
        assert!(peers.over(ip(2), 101), "one connection is over");
        assert!(!peers.over(ip(2), 100));
        peers.paused(ip(1), Token(7), true);
        peers.paused(ip(1), Token(7), false);
        assert_eq!(peers.pressure().paused, 1);
        // Below the bound again: the paused connection is woken.
        peers.unread(ip(1), both(250), none(), &mut budget);
        assert_eq!(peers.take_woken(), vec![Token(7)]);
        assert_eq!(budget.used(), 250);
        peers.resumed();
        peers.close(ip(1), both(250), false, &mut budget);
        peers.close(ip(1), none(), false, &mut budget);
        assert_eq!(budget.used(), 0);
        assert_eq!(peers.pressure().unread, 0);
        assert_eq!(peers.n_over, 0);
        assert!(!peers.at_cap(ip(1)));
    }

    #[test]
    fn the_connection_cap_counts_open_connections() {
        let mut peers = Peers::new(2, 100, 100);
        peers.open(ip(1));
        assert!(!peers.at_cap(ip(1)));
        peers.open(ip(1));
        assert!(peers.at_cap(ip(1)));
        assert!(!peers.at_cap(ip(2)));
    }
}
