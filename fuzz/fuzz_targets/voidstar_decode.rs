//! Fuzz target: flat voidstar decoding never panics, whatever decodes
//! survives an encode/decode round trip with the same JSON text, and
//! rendering the blob straight to JSON (`voidstar::to_json`) gives that text.
//!
//! The first input byte picks a schema from a small table; the rest is the
//! blob. JSON text is compared rather than values because NaN is not equal
//! to itself.

#![no_main]
use libfuzzer_sys::fuzz_target;

use morloc_mcp::{format::schema, format::value, format::voidstar};

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
    "aaas",
    // Recursion through a tuple inside a list (issue #11), and mutual.
    "&4Trie<dict>m23val?j4subsat2s^4Trie",
    "&1Am21xj2bsa&1Bm21yt2i1^1A1zs",
];

fn json(schema: &schema::Schema, v: &value::Value) -> String {
    let mut out = String::new();
    value::to_json(schema, v, &mut out).expect("a decoded value renders as JSON");
    out
}

fuzz_target!(|data: &[u8]| {
    let Some((&pick, blob)) = data.split_first() else { return };
    let schema = schema::parse(SCHEMAS[pick as usize % SCHEMAS.len()]).expect("table schemas parse");
    // Aliased pointers can describe a huge text: the limit keeps runs short.
    let mut direct = String::new();
    let rendered =
        voidstar::to_json_limited(&schema, &voidstar::Flat(blob), 0, &mut direct, 1 << 22);
    let Ok(decoded) = voidstar::decode_flat(&schema, blob) else { return };
    match rendered {
        Ok(()) => assert_eq!(direct, json(&schema, &decoded)),
        Err(e) => assert_eq!(e.kind, voidstar::DecodeErrorKind::OverBudget, "{e}"),
    }
    let encoded = voidstar::encode_flat(&schema, &decoded).expect("a decoded value encodes");
    // The canonical blob costs no more to decode than the original did, so
    // the default budget always suffices here.
    let again = voidstar::decode(&schema, &voidstar::Flat(&encoded), 0).expect("our own blob decodes");
    assert_eq!(json(&schema, &decoded), json(&schema, &again));
    assert_eq!(voidstar::encode_flat(&schema, &again).expect("re-encodes"), encoded);
});
