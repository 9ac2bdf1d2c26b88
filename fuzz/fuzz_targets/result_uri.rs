//! Result URIs and pages (`--max-result-chars`): parsing arbitrary text
//! never panics, an accepted URI keeps its id and its page, and a page of a
//! value built from the same bytes is cut without panicking, a list page
//! being valid JSON when the value is.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::format::json::page::{Kind, Paged};
use morloc_mcp::protocol::mcp::bigresults::{parse_uri, uri_of};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    // The text up to the first newline is a URI, the rest a value's text.
    let (uri, value) = text.split_once('\n').unwrap_or((text, "[1,2,3]"));
    let Ok(parsed) = parse_uri(uri) else {
        return;
    };
    assert!(uri.starts_with(&uri_of(&parsed.id)));
    let paged = Paged::new(value.to_string());
    let offset = parsed.offset.unwrap_or(0);
    let limit = parsed.limit.unwrap_or(10).min(1 << 16);
    let page = paged.page(offset, limit);
    let _ = paged.preview(limit);
    if paged.kind() == Kind::List && serde_json::from_str::<serde_json::Value>(value).is_ok() {
        let items: serde_json::Value = serde_json::from_str(&page).expect("a list page is JSON");
        assert!(items.as_array().is_some_and(|a| a.len() <= limit));
    }
});
