//! Fuzzes the checks of a modern (2026-07-28) request: its era, its `_meta`,
//! and the HTTP headers that mirror its body. The input is split in two at
//! the first NUL byte: the JSON-RPC message, then an `Mcp-Name` header
//! value. Nothing may panic; a Base64 header value that decodes must encode
//! back to the same text; every refusal must be a JSON-RPC error carrying
//! the request's id.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::jsonrpc::{decode, Incoming};
use morloc_mcp::protocol::mcp::{base64, era, headers};

fuzz_target!(|data: &[u8]| {
    let (body, name) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let name = String::from_utf8_lossy(name).into_owned();
    if let Some(text) = name
        .strip_prefix("=?base64?")
        .and_then(|r| r.strip_suffix("?="))
    {
        if let Some(bytes) = headers::base64_decode(text) {
            assert_eq!(base64(&bytes), text, "base64 round trip");
        }
    }
    let Incoming::Request { id, method, params } = decode(body) else {
        return;
    };
    let _ = era::is_modern(&method, params.as_ref(), false);
    if let Err(reply) = era::request_meta(&id, params.as_ref()) {
        assert_eq!(reply["id"], id.to_json(), "{reply}");
        assert!(reply["error"]["code"].is_i64(), "{reply}");
    }
    let lookup = |header: &str| match header {
        "mcp-protocol-version" => Some("2026-07-28".to_string()),
        "mcp-method" => Some(method.clone()),
        "mcp-name" => Some(name.clone()),
        _ => None,
    };
    if let Err(reply) = headers::check(&id, &method, params.as_ref(), &lookup) {
        assert_eq!(reply["error"]["code"], -32020, "{reply}");
    }
});
