//! Readiness probes: a starting pool process is pinged on its socket, with
//! a growing delay between tries, until it answers; then it is *Ready* and
//! the calls waiting for it may go.

use std::io::{self, Read, Write};
use std::time::Instant;

use mio::net::UnixStream;
use mio::Interest;

use super::set::{Probe, PROBE_DELAY_MAX};
use super::{PoolStatus, Proc};
use crate::edge::reactor::{Reactor, Source};
use crate::format::packet;

impl Reactor {
    pub(super) fn start_probe(&mut self, program: usize, i: Proc) {
        let pool = &self.pools[(program, i)];
        if !matches!(pool.status, PoolStatus::Starting) || pool.probing.probe.is_some() {
            return;
        }
        if self.pools.rt(program).leases.exclusive(i) {
            // A ping would free the block of the result still being read.
            return self.schedule_probe(program, i);
        }
        match UnixStream::connect(&pool.socket_path) {
            Ok(mut stream) => {
                let token = self.token(Source::Probe { program, pool: i });
                if self
                    .poll
                    .registry()
                    .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                    .is_err()
                {
                    self.sources.remove(&token);
                    return self.schedule_probe(program, i);
                }
                self.pools[(program, i)].probing.probe = Some(Probe {
                    stream,
                    token,
                    written: 0,
                    read: Vec::new(),
                });
                self.advance_probe(program, i);
            }
            // Not bound or not listening yet.
            Err(_) => self.schedule_probe(program, i),
        }
    }

    pub(super) fn schedule_probe(&mut self, program: usize, i: Proc) {
        let pool = &mut self.pools[(program, i)];
        pool.probing.next = Some(Instant::now() + pool.probing.delay);
        pool.probing.delay = (pool.probing.delay * 3 / 2).min(PROBE_DELAY_MAX);
    }

    pub(super) fn end_probe(&mut self, program: usize, i: Proc) {
        if let Some(mut probe) = self.pools[(program, i)].probing.probe.take() {
            let _ = self.poll.registry().deregister(&mut probe.stream);
            self.sources.remove(&probe.token);
        }
    }

    pub(in crate::edge::reactor) fn advance_probe(&mut self, program: usize, i: Proc) {
        let ping = packet::ping();
        let Some(probe) = self.pools[(program, i)].probing.probe.as_mut() else {
            return;
        };
        let mut failed = false;
        while probe.written < ping.len() {
            match probe.stream.write(&ping[probe.written..]) {
                Ok(n) => probe.written += n,
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => {
                    failed = true;
                    break;
                }
            }
        }
        let mut buf = [0u8; 32];
        while !failed && probe.read.len() < 32 {
            let want = 32 - probe.read.len();
            match probe.stream.read(&mut buf[..want]) {
                Ok(0) => failed = true,
                Ok(n) => probe.read.extend_from_slice(&buf[..n]),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(_) => failed = true,
            }
        }
        let ok = !failed && packet::is_pong(&probe.read);
        self.end_probe(program, i);
        if !ok {
            return self.schedule_probe(program, i);
        }
        self.pools[(program, i)].status = PoolStatus::Ready;
        if let Some(failed) = self.pools[(program, i)].life.broken.take() {
            let lang = self.pools[(program, i)].label();
            self.say(
                &format!("restart breaker closed: {lang}"),
                &format!(
                    "pool '{lang}' is ready again: restart breaker closed ({failed} call(s) failed at once while it was open)"
                ),
            );
        }
        // Calls waiting for this pool go once every pool they need is ready
        // (and their lease is free).
        self.dispatch_waiting(program);
    }
}
