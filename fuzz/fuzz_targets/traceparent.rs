//! W3C trace context: parsing arbitrary text never panics; an accepted
//! `traceparent` has non-zero ids and, for version 00, prints back as the
//! same text; an accepted `tracestate` is within its limits.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::trace::{hex, parse_traceparent, valid_tracestate, Incoming};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The text up to the first newline is a traceparent, the rest a tracestate.
    let (parent, state) = text.split_once('\n').unwrap_or((text, ""));
    if let Some(p) = parse_traceparent(parent) {
        assert_ne!(p.trace_id, [0; 16]);
        assert_ne!(p.parent_id, [0; 8]);
        if parent.starts_with("00") {
            let again = format!(
                "00-{}-{}-{}",
                hex(&p.trace_id),
                hex(&p.parent_id),
                hex(&[p.flags])
            );
            assert_eq!(again, parent);
        }
    }
    if valid_tracestate(state) {
        assert!(state.len() <= 512);
        assert!(state.split(',').filter(|m| !m.trim().is_empty()).count() <= 32);
    }
    let incoming = Incoming::from_values(Some(parent), Some(state));
    assert!(incoming.state.is_none() || incoming.parent.is_some());
});
