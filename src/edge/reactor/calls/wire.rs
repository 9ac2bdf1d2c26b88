//! A call's wire: its CALL packet written to its pool process and the
//! reply read until complete, a big packet a slice per turn (`prepare`),
//! the reply decoded in the same turn, before anything else can run; a
//! reply naming a result file opens it, to be read a slice per turn
//! (`result_file`) and then decoded.

use std::io::{self, Read, Write};
use std::path::PathBuf;

use mio::{Interest, Registry};

use super::result_file::{ResultFile, Sliced};
use super::{CallId, CallStage, Calls};
use crate::edge::log;
use crate::edge::reactor::pools::{BasePool, PoolSet, Proc};
use crate::format::packet;
use crate::protocol::mcp::call::{self, Ending};
use crate::protocol::mcp::Catalog;

/// The largest reply accepted from a pool (header + metadata + payload).
const MAX_REPLY: u64 = 4 << 30;
/// Bytes of a CALL packet written to its pool per turn.
const SEND_SLICE: usize = 1 << 20;

/// What the reactor does after [`Calls::advance`].
pub(super) enum Advance {
    /// Nothing: the socket's next event moves the call on.
    Wait,
    /// More of the packet to write, in a later turn (`prepare`).
    SendLater,
    /// The connection broke (see `Calls::lose`).
    Lost(String),
    /// The call ends so (its reply, or a bad one).
    Ended(Ending),
    /// The reply named a result file, now open: it is read a slice per
    /// turn ([`Calls::read_slice`]).
    ReadFile,
}

/// What [`Calls::read_slice`] did.
pub(super) enum FileSlice {
    /// A slice was read; the rest waits for a later turn.
    Later,
    /// The call ends so (its result, or the error reading it). An
    /// abandoned call ends too (its result goes nowhere).
    Ended(Ending),
}

impl Calls {
    /// Moves call `id`'s packet out and its reply in, as far as its socket
    /// allows now (a big packet a slice per turn): what the reactor does
    /// next. A complete reply is decoded at once, before anything else runs.
    pub(super) fn advance(
        &mut self,
        id: CallId,
        catalog: &Catalog,
        pools: &mut PoolSet,
        registry: &Registry,
        scratch: &mut Vec<u8>,
    ) -> Advance {
        let Some(call) = self.get_mut(&id) else {
            return Advance::Wait;
        };
        // Named only in messages: a label is a new string.
        let (program, slot) = (call.program, call.sched.slot);
        let lang = || pools.label(program, slot);
        let wire = &mut call.wire;
        let Some((_, stream)) = wire.stream.as_mut() else {
            return Advance::Wait;
        };
        if call.stage == CallStage::Sending {
            // The pool parses the header from its first read, so the whole
            // packet goes out in as few writes as the socket allows; a big
            // one a slice per turn while the pool keeps up (`prepare`).
            let mut sent = 0;
            while wire.written < wire.packet.len() {
                if sent >= SEND_SLICE {
                    return Advance::SendLater;
                }
                match stream.write(&wire.packet[wire.written..]) {
                    Ok(n) => {
                        wire.written += n;
                        sent += n;
                    }
                    Err(e) if e.kind() == io::ErrorKind::WouldBlock => {
                        if let Some((token, stream)) = wire.stream.as_mut() {
                            let _ = registry.reregister(
                                stream,
                                *token,
                                Interest::READABLE | Interest::WRITABLE,
                            );
                        }
                        return Advance::Wait;
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                    Err(e) => {
                        let message = format!("cannot send the call to pool '{}': {e}", lang());
                        return Advance::Lost(message);
                    }
                }
            }
            call.stage = CallStage::Receiving;
            wire.packet = Vec::new();
            // The reply cannot be there yet; its readable event will come.
            return Advance::Wait;
        }
        loop {
            let received = wire.reply.len();
            let read = match wire.expected {
                // Header unknown yet: a small buffer holds most replies whole.
                None => {
                    if scratch.len() != crate::edge::reactor::SCRATCH_LEN {
                        *scratch = vec![0u8; crate::edge::reactor::SCRATCH_LEN];
                    }
                    let head = &mut scratch[..4096];
                    stream
                        .read(head)
                        .inspect(|&n| wire.reply.extend_from_slice(&head[..n]))
                }
                Some(total) if received >= total => break,
                // Read straight into the reply, growing it by at most 1 MiB
                // at a time (a bogus length must not allocate up front).
                Some(total) => {
                    let end = total.min(received + (1 << 20));
                    wire.reply.resize(end, 0);
                    let res = stream.read(&mut wire.reply[received..end]);
                    wire.reply.truncate(received + *res.as_ref().unwrap_or(&0));
                    res
                }
            };
            match read {
                Ok(0) => {
                    let message = match wire.expected {
                        None if wire.reply.is_empty() => {
                            format!("pool '{}' closed the connection without replying", lang())
                        }
                        _ => format!(
                            "pool '{}' closed the connection in the middle of its reply ({} of {} bytes received)",
                            lang(),
                            wire.reply.len(),
                            wire.expected
                                .map_or_else(|| "at least 32".to_string(), |t| t.to_string())
                        ),
                    };
                    return Advance::Lost(message);
                }
                Ok(_) => {
                    if wire.expected.is_none() && wire.reply.len() >= packet::HEADER_LEN {
                        let mut head = [0u8; packet::HEADER_LEN];
                        head.copy_from_slice(&wire.reply[..packet::HEADER_LEN]);
                        match packet::packet_len(&head) {
                            Ok(total) if total <= MAX_REPLY => {
                                let total = total as usize;
                                if wire.reply.len() > total {
                                    let message = format!(
                                        "pool '{}' sent bytes after its reply packet",
                                        lang()
                                    );
                                    return Advance::Ended(Ending::Error(message));
                                }
                                wire.expected = Some(total);
                            }
                            Ok(total) => {
                                let message = format!(
                                    "pool '{}' announced a {total}-byte reply, over the {MAX_REPLY}-byte limit",
                                    lang()
                                );
                                return Advance::Ended(Ending::Error(message));
                            }
                            Err(e) => {
                                let message = format!("{e} (pool '{}')", lang());
                                return Advance::Ended(Ending::Error(message));
                            }
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => return Advance::Wait,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    let message = format!("cannot read the reply of pool '{}': {e}", lang());
                    return Advance::Lost(message);
                }
            }
        }
        // A complete reply: decode it now, before anything else runs.
        let reply = std::mem::take(&mut wire.reply);
        let (program, command, slot) = (call.program, call.request.command, call.sched.slot);
        let path = match decode_reply(catalog, pools, (program, slot), command, &reply) {
            Ok(ending) => return Advance::Ended(ending),
            Err(path) => path,
        };
        match ResultFile::open(&path, MAX_REPLY) {
            Ok(file) => {
                log::debug(&format!(
                    "reading the result file {} in slices",
                    path.display()
                ));
                wire.file = Some(Box::new(file));
                call.stage = CallStage::ReadingFile;
                Advance::ReadFile
            }
            Err(message) => Advance::Ended(Ending::Error(message)),
        }
    }

    /// Reads one slice of call `id`'s result file; at its end the result
    /// is decoded. `None` when the call is gone.
    pub(super) fn read_slice(
        &mut self,
        id: CallId,
        catalog: &Catalog,
        pools: &mut PoolSet,
    ) -> Option<FileSlice> {
        let call = self.get_mut(&id)?;
        let file = call.wire.file.as_mut()?;
        if call.abandoned {
            // Its client is gone: the file goes with the call, unread.
            return Some(FileSlice::Ended(Ending::Error(String::new())));
        }
        let bytes = match file.step() {
            Sliced::More => return Some(FileSlice::Later),
            Sliced::Failed(message) => return Some(FileSlice::Ended(Ending::Error(message))),
            Sliced::Done(bytes) => bytes,
        };
        log::debug(&format!(
            "read the result file {}: {} bytes in {} slices",
            file.path().display(),
            bytes.len(),
            file.slices.steps()
        ));
        // Removed now that it is read.
        call.wire.file = None;
        let prog = &catalog.programs[call.program];
        let reader = pools.reader(call.program, call.sched.slot);
        // The file holds the result's msgpack value.
        let reply = packet::Reply::Msgpack(&bytes);
        let ending = call::reply_result(prog, call.request.command, reply, &*reader);
        Some(FileSlice::Ended(ending))
    }
}

/// The outcome a complete reply packet from process `slot` of `program`
/// gives call of `command` (a shared-memory result is read through the
/// process's reader), or the path of the result file it names, to read
/// first.
fn decode_reply(
    catalog: &Catalog,
    pools: &mut PoolSet,
    (program, slot): (usize, Proc),
    command: usize,
    bytes: &[u8],
) -> Result<Ending, PathBuf> {
    let prog = &catalog.programs[program];
    let lang = pools.lang(program, BasePool(prog.command(command).pool));
    let reply = match packet::parse_reply(bytes) {
        Ok(packet::Reply::File(path)) => return Err(path),
        Ok(reply) => reply,
        Err(e) => return Ok(Ending::Error(format!("{e} (pool '{lang}')"))),
    };
    let shared = matches!(reply, packet::Reply::Rptr(_));
    let reader = pools.reader(program, slot);
    let result = call::reply_result(prog, command, reply, &*reader);
    if shared {
        // Volumes may be unlinked and recreated under the same index;
        // mappings are cheap to redo.
        reader.clear();
    }
    Ok(result)
}
