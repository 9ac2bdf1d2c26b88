//! Manifests: loading arbitrary text and shaping the tool surface of whatever
//! loads never panics.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::{format::manifest::Manifest, protocol::tools};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(manifest) = Manifest::from_json(text, &mut Vec::new()) {
        let surface = tools::build(&manifest);
        let _ = serde_json::to_string(&surface.list_result());
    }
});
