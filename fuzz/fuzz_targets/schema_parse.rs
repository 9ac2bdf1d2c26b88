//! Schema strings: parsing never panics, a parsed schema renders to text
//! that parses back to a schema with the same rendering, and compiling its
//! voidstar layout never panics (it succeeds or names the infinite type).
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::format::{schema, value};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(parsed) = schema::parse(text) {
        let once = parsed.to_wire_string();
        let reparsed = match schema::parse(&once) {
            Ok(reparsed) => reparsed,
            Err(e) => panic!("rendering {once:?} of {text:?} does not parse: {e}"),
        };
        assert_eq!(once, reparsed.to_wire_string(), "from {text:?}");
        let _ = value::Layout::new(&parsed);
    }
});
