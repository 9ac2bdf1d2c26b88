//! Instance ids and the ids they mint: parsing arbitrary text never panics,
//! an accepted name round-trips, an id minted by one instance is owned by it
//! (with the same random bytes) and by no instance of another name, and
//! arbitrary text is owned only when it has exactly the minted form.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::instance::{instance_of, InstanceId};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The text up to the first newline is a name, the rest an id to judge.
    let (name, id) = text.split_once('\n').unwrap_or((text, ""));
    let Ok(instance) = InstanceId::parse(name) else {
        return;
    };
    assert_eq!(instance.as_str(), name);
    let mut random = [0u8; 16];
    for (slot, byte) in random.iter_mut().zip(id.bytes()) {
        *slot = byte;
    }
    let minted = instance.mint(&random);
    assert_eq!(instance.owns(&minted), Some(random));
    assert_eq!(instance_of(&minted), Some(name));
    // A longer name (when still within the limit) owns none of them.
    if let Ok(other) = InstanceId::parse(&format!("{name}x")) {
        assert_eq!(other.owns(&minted), None);
    }
    if let Some(bytes) = instance.owns(id) {
        assert_eq!(instance.mint(&bytes), id);
    }
});
