//! The JWKS side of OAuth: parsing arbitrary bytes as a key set, as an HTTP
//! response of the fetch (whole or not), and as the fetch's URL never
//! panics; every key kept is for an accepted algorithm, looking one up
//! never panics, and a response the fetch would end on reads as one.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::oauth::{fetch, jwks, Jwks};

fuzz_target!(|data: &[u8]| {
    if let Ok(set) = Jwks::parse(data) {
        assert!(!set.keys.is_empty());
        for key in &set.keys {
            assert!(jwks::ALGS.contains(&key.alg()));
            assert!(!key.verifies(key.alg(), b"message", b"signature"));
        }
        let _ = set.find(None, "RS256");
        let _ = set.find(Some("k"), "ES256");
    }
    // A response the fetch would end early on reads as one.
    if fetch::complete(data) {
        assert!(fetch::response(data).is_ok());
    }
    if let Ok((status, body)) = fetch::response(data) {
        assert!((100..=999).contains(&status));
        assert!(body.len() <= data.len());
    }
    if let Ok(text) = std::str::from_utf8(data) {
        if let Ok(url) = fetch::Url::parse(text) {
            let request = url.request();
            assert!(request.ends_with(b"\r\n\r\n"));
            assert_eq!(request.iter().filter(|b| **b == b'\n').count(), 6);
        }
    }
});
