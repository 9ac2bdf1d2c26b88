//! Fuzz target: msgpack decoding never panics, and re-encoding is a fixed
//! point: decode, encode, decode again and encode again give the same bytes.
//!
//! The first input byte picks a schema from a small table; the rest is the
//! payload. Bytes are compared rather than values because NaN is not equal
//! to itself.

#![no_main]
use libfuzzer_sys::fuzz_target;

use morloc_mcp::{format::msgpack, format::schema};

const SCHEMAS: &[&str] = &[
    "j",
    "s",
    "aj",
    "?j",
    "ai4",
    "af8",
    "f4",
    "a?s",
    "u8",
    "i1",
    "ab",
    "az",
    "F",
    "a:2u2",
    "t2js",
    "t2i1m11xb",
    "at2sj",
    "am21xj1yj",
    "m36tmpDirsanumThreadsjcremoveCachesb",
    "m21pt2i1i41q?m11xb",
    "&4Treem25valuej8childrena^4Tree",
    "&4Listm24headj4tail?^4List",
    // Recursion through a tuple inside a list (issue #11), and mutual.
    "&4Trie<dict>m23val?j4subsat2s^4Trie",
    "&1Am21xj2bsa&1Bm21yt2i1^1A1zs",
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, payload)) = data.split_first() else { return };
    let schema = schema::parse(SCHEMAS[pick as usize % SCHEMAS.len()]).expect("table schemas parse");
    let Ok(decoded) = msgpack::decode(&schema, payload) else { return };
    let once = msgpack::encode(&schema, &decoded).expect("a decoded value encodes");
    let again = msgpack::decode(&schema, &once).expect("our own encoding decodes");
    let twice = msgpack::encode(&schema, &again).expect("re-encodes");
    assert_eq!(once, twice);
});
