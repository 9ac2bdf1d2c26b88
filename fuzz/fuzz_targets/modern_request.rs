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
        "mcp-protocol-version" => Some("2026-07-28"),
        "mcp-method" => Some(method.as_str()),
        "mcp-name" => Some(name.as_str()),
        _ => None,
    };
    let checked = headers::check(&id, &method, params.as_ref(), &lookup);
    if let Err(reply) = &checked {
        assert_eq!(reply["error"]["code"], -32020, "{reply}");
    }
    // A call read in place is checked the same from its parts.
    let declared = era::declared_version(params.as_ref()).and_then(|v| v.as_str());
    let name_field = params.as_ref().and_then(|p| p.get("name"));
    if let (Some(version), "tools/call") = (declared, method.as_str()) {
        if name_field.is_none_or(|n| n.is_string()) {
            let body_name = name_field.and_then(|n| n.as_str());
            let in_place = headers::check_call(&id, version, body_name, &lookup);
            assert_eq!(in_place, checked, "check_call and check differ");
        }
    }
});
