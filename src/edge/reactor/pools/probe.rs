//! Readiness probes: a starting pool process is pinged on its socket, with
//! a growing delay between tries, until it answers; then it is *Ready* and
//! the calls waiting for it may go.

use std::io::{self, Read, Write};
use std::time::Instant;

use mio::net::UnixStream;
use mio::Interest;

use super::set::PROBE_DELAY_MAX;
use super::{Cx, PoolNews, PoolSet, PoolStatus, PoolTimer, Probe, Proc};
use crate::edge::log;
use crate::edge::reactor::Source;
use crate::format::packet;

impl PoolSet {
    /// Pings starting process `i` on its socket, unless a ping is in flight.
    pub(super) fn start_probe(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        let pool = &self[(program, i)];
        if !matches!(pool.status, PoolStatus::Starting) || pool.probing.probe.is_some() {
            return;
        }
        if self.rt(program).leases.exclusive(i) {
            // A ping would free the block of the result still being read.
            return self.schedule_probe(program, i);
        }
        match UnixStream::connect(&pool.socket_path) {
            Ok(mut stream) => {
                let token = cx.sources.add(Source::Probe { program, pool: i });
                if cx
                    .registry
                    .register(&mut stream, token, Interest::READABLE | Interest::WRITABLE)
                    .is_err()
                {
                    cx.sources.remove(&token);
                    return self.schedule_probe(program, i);
                }
                self[(program, i)].probing.probe = Some(Probe {
                    stream,
                    token,
                    written: 0,
                    read: Vec::new(),
                });
                self.advance_probe(cx, program, i);
            }
            // Not bound or not listening yet.
            Err(_) => self.schedule_probe(program, i),
        }
    }

    /// The next ping to process `i` goes after a growing delay.
    pub(super) fn schedule_probe(&mut self, program: usize, i: Proc) {
        let pool = &mut self[(program, i)];
        let at = Instant::now() + pool.probing.delay;
        pool.probing.delay = (pool.probing.delay * 3 / 2).min(PROBE_DELAY_MAX);
        self.timers.set(PoolTimer::Probe(program, i), Some(at));
    }

    pub(super) fn end_probe(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        if let Some(mut probe) = self[(program, i)].probing.probe.take() {
            let _ = cx.registry.deregister(&mut probe.stream);
            cx.sources.remove(&probe.token);
        }
    }

    /// Moves process `i`'s ping along (its socket is ready): a pong makes
    /// it *Ready*.
    pub(in crate::edge::reactor) fn advance_probe(&mut self, cx: &mut Cx, program: usize, i: Proc) {
        let ping = packet::ping();
        let Some(probe) = self[(program, i)].probing.probe.as_mut() else {
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
        self.end_probe(cx, program, i);
        if !ok {
            return self.schedule_probe(program, i);
        }
        self.set_status(program, i, PoolStatus::Ready);
        if log::enabled(crate::protocol::log::Level::Debug) {
            let pool = &self[(program, i)];
            // Not `{:.1}`: the standard library's float printing would be
            // linked for this one line (`format::decimal`).
            let ms = pool.life.started_at.elapsed().as_secs_f64() * 1000.0;
            log::debug(&format!(
                "pool '{}' ready after {} ms",
                pool.label(),
                crate::format::decimal::fixed(ms, 1)
            ));
        }
        if let Some(failed) = self[(program, i)].life.broken.take() {
            let lang = self[(program, i)].label();
            self.news.push(PoolNews::Say(
                format!("restart breaker closed: {lang}"),
                format!(
                    "pool '{lang}' is ready again: restart breaker closed ({failed} call(s) failed at once while it was open)"
                ),
            ));
        }
        // Calls waiting for this pool go once every pool they need is ready
        // (and their lease is free).
        self.news.push(PoolNews::Ready(program));
    }
}
