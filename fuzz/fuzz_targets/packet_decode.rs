//! Fuzz target: packet parsing never panics on arbitrary bytes.
//!
//! Replies come from pool processes we do not trust to be well-formed, so
//! every entry point that reads packet bytes must fail cleanly.

#![no_main]
use libfuzzer_sys::fuzz_target;

use morloc_mcp::format::packet;

fuzz_target!(|data: &[u8]| {
    if let Some(header) = data.first_chunk::<{ packet::HEADER_LEN }>() {
        let _ = packet::packet_len(header);
    }
    if let Ok(packet) = packet::Packet::parse(data) {
        let _ = packet.schema();
        assert!(packet.metadata.len() + packet.payload.len() + packet::HEADER_LEN <= data.len());
    }
    let _ = packet::parse_reply(data);
    let _ = packet::parse_call(data);
    let _ = packet::is_pong(data);
});
