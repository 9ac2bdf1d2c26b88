//! Unit tests of the voidstar codec (kept apart from the code they test).

use super::*;
use crate::format::schema::parse;
use crate::format::value::{from_json, to_json};

fn hex(text: &str) -> Vec<u8> {
    let clean: String = text.chars().filter(|c| c.is_ascii_hexdigit()).collect();
    (0..clean.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&clean[i..i + 2], 16).unwrap())
        .collect()
}

fn value(schema: &Schema, json: &str) -> Value {
    from_json(schema, &serde_json::from_str(json).unwrap(), "x").unwrap()
}

fn json_of(schema: &Schema, v: &Value) -> String {
    let mut out = String::new();
    to_json(schema, v, &mut out).unwrap();
    out
}

/// Encodes `json` as `schema` and compares the blob with `expected`
/// (hex; `..` in the spec's notation is written out), then decodes it back.
#[track_caller]
fn check_bytes(schema: &str, json: &str, expected: &[u8]) {
    let schema = parse(schema).unwrap();
    let v = value(&schema, json);
    let blob = encode_flat(&schema, &v).unwrap();
    assert_eq!(blob, expected, "{json}");
    assert_eq!(flat_size(&schema, &v).unwrap(), blob.len());
    let back = decode_flat(&schema, &blob).unwrap();
    assert_eq!(json_of(&schema, &back), json_of(&schema, &v));
}

fn le(v: u64) -> Vec<u8> {
    v.to_le_bytes().to_vec()
}

fn cat(parts: &[&[u8]]) -> Vec<u8> {
    parts.concat()
}

#[test]
fn spec_examples_are_byte_identical() {
    // schema-and-data §2.6
    check_bytes(
        "<dict>m36tmpDirsanumThreadsjcremoveCachesb",
        r#"{"tmpDir":"/t","numThreads":4,"removeCaches":true}"#,
        &hex("0200000000000000 2800000000000000 0100000000000000 0400000000000000 0100000000000000 2f74"),
    );
    check_bytes(
        "t2i4s",
        r#"[1,"x"]"#,
        &cat(&[&hex("01000000 00000000"), &le(1), &le(24), b"x"]),
    );
    check_bytes(
        "am21ai11bi1",
        r#"[{"a":1,"b":2},{"a":3,"b":4}]"#,
        &cat(&[&le(2), &le(16), &[1, 2, 3, 4], &[0; 7]]),
    );
    check_bytes(
        "m21pt2i1i41q?m11xb",
        r#"{"p":[1,2],"q":null}"#,
        &hex("01000000 02000000 ffffffffffffffff"),
    );
    check_bytes(
        "&4Treem25valuej8childrena^4Tree",
        r#"{"value":1,"children":[{"value":2,"children":[]}]}"#,
        &cat(&[
            &le(1),
            &le(1),
            &le(1),
            &le(32),
            &le(1),
            &le(2),
            &le(0),
            &le(0),
            &[0; 7],
        ]),
    );
    // schema-and-data §6.1
    check_bytes(
        "ai4",
        "[1,2,3]",
        &cat(&[
            &le(3),
            &le(64),
            &[0; 48],
            &hex("01000000 02000000 03000000"),
            &[0; 15],
        ]),
    );
    check_bytes(
        "as",
        r#"["ab","c"]"#,
        &cat(&[
            &le(2),
            &le(16),
            &le(2),
            &le(48),
            &le(1),
            &le(50),
            b"abc",
            &[0; 7],
        ]),
    );
    check_bytes(
        "as",
        r#"["a",""]"#,
        &cat(&[
            &le(2),
            &le(16),
            &le(1),
            &le(48),
            &le(0),
            &le(0),
            b"a",
            &[0; 7],
        ]),
    );
    check_bytes("?i4", "7", &cat(&[&le(8), &hex("07000000"), &[0; 3]]));
    check_bytes(
        "a?s",
        r#"[null,"q"]"#,
        &cat(&[
            &le(2),
            &le(16),
            &hex("ffffffffffffffff"),
            &le(32),
            &le(1),
            &le(48),
            b"q",
            &[0; 14],
        ]),
    );
    check_bytes(
        "j",
        "18446744073709551616",
        &cat(&[&le(2), &le(16), &le(0), &le(1), &[0; 7]]),
    );
    // The wire fixtures' argument payloads.
    check_bytes("j", "41", &cat(&[&le(1), &le(41)]));
    check_bytes("?j", "null", &le(u64::MAX));
    check_bytes("s", r#""World""#, &cat(&[&le(5), &le(16), b"World"]));
    check_bytes(
        "aj",
        "[1,2,3,4]",
        &cat(&[
            &le(4),
            &le(16),
            &le(1),
            &le(1),
            &le(1),
            &le(2),
            &le(1),
            &le(3),
            &le(1),
            &le(4),
            &[0; 7],
        ]),
    );
    check_bytes("f8", "1.5", &hex("000000000000f83f"));
    check_bytes("z", "null", &[]);
    check_bytes("b", "true", &[1]);
    check_bytes("as", "[]", &cat(&[&le(0), &le(0)]));
    check_bytes("j", "0", &cat(&[&le(1), &le(0)]));
    check_bytes("j", "-9223372036854775808", &cat(&[&le(1), &le(1 << 63)]));
    check_bytes(
        "j",
        "9223372036854775808",
        &cat(&[&le(2), &le(16), &le(1 << 63), &le(0), &[0; 7]]),
    );
    check_bytes("F", r#""""#, &cat(&[&[0; 8], &le(u64::MAX)]));
    check_bytes("F", r#""/a""#, &cat(&[&[0; 8], &le(16), &le(2), b"/a"]));
}

#[test]
fn handle_after_misaligned_data_grows_the_buffer() {
    // The reference size function forgets the path's alignment padding.
    let schema = parse("t2sF").unwrap();
    let v = value(&schema, r#"["a","/p"]"#);
    let blob = encode_flat(&schema, &v).unwrap();
    assert_eq!(flat_size(&schema, &v).unwrap(), 32 + 1 + 8 + 2);
    assert_eq!(blob.len(), 40 + 8 + 2);
    assert_eq!(
        json_of(&schema, &decode_flat(&schema, &blob).unwrap()),
        r#"["a","/p"]"#
    );
}

/// Schemas and values for round trips, including alignment traps and
/// recursion.
pub(crate) const SEEDS: &[(&str, &str)] = &[
    ("z", "null"),
    ("b", "false"),
    ("i1", "-128"),
    ("i2", "-300"),
    ("i4", "2147483647"),
    ("i8", "-9223372036854775808"),
    ("u1", "255"),
    ("u2", "65535"),
    ("u4", "4294967295"),
    ("u8", "18446744073709551615"),
    ("f4", "1.5"),
    ("f8", "-0.1"),
    ("f8", "\"nan\""),
    ("f8", "\"-inf\""),
    ("j", "0"),
    ("j", "1"),
    ("j", "-1"),
    ("j", "9223372036854775808"),
    ("j", "-9223372036854775808"),
    ("j", "18446744073709551616"),
    ("j", "-18446744073709551616"),
    ("j", "-123456789012345678901234567890123456789012345678901234567890"),
    ("s", "\"\""),
    ("s", "\"héllo\\n\""),
    ("ai4", "[1,2,3]"),
    ("ai1", "[]"),
    ("aaf8", "[[1.5],[],[2.5,3.5]]"),
    ("a:2u2", "[1,2]"),
    ("as", "[\"ab\",\"\",\"c\"]"),
    ("t2i1m11xb", "[1,{\"x\":true}]"),
    ("at2i1m11xb", "[[1,{\"x\":true}],[2,{\"x\":false}]]"),
    ("t3i2saf4", "[7,\"s\",[0.5,1.5]]"),
    ("m21pt2i1i41q?m11xb", "{\"p\":[1,2],\"q\":{\"x\":true}}"),
    ("?m21aj1bs", "{\"a\":18446744073709551616,\"b\":\"q\"}"),
    ("a?j", "[null,5,null,-99999999999999999999]"),
    ("??j", "7"),
    ("at2sj", "[[\"a\",1],[\"b\",2]]"),
    ("m36tmpDirsanumThreadsjcremoveCachesb", "{\"tmpDir\":\"/x\",\"numThreads\":9,\"removeCaches\":false}"),
    (
        "&4Treem25valuej8childrena^4Tree",
        "{\"value\":1,\"children\":[{\"value\":2,\"children\":[]},{\"value\":3,\"children\":[{\"value\":4,\"children\":[]}]}]}",
    ),
    ("&4Listm24headj4tail?^4List", "{\"head\":1,\"tail\":{\"head\":2,\"tail\":null}}"),
    // Recursion behind a list through a tuple or record (issue #11), behind
    // an optional through a tuple, several levels deep, and mutual.
    (
        "&4Trie<dict>m23val?j4subsat2s^4Trie",
        "{\"val\":null,\"subs\":[[\"L\",{\"val\":0,\"subs\":[]}],[\"R\",{\"val\":7,\"subs\":[[\"x\",{\"val\":null,\"subs\":[]}]]}]]}",
    ),
    (
        "&6TreeKV<dict>m33keys5valuej8childrenat2s^6TreeKV",
        "{\"key\":\"inner\",\"value\":0,\"children\":[[\"L\",{\"key\":\"leaf\",\"value\":1,\"children\":[]}]]}",
    ),
    ("&1Am21xi41n?t2i1^1A", "{\"x\":1,\"n\":[2,{\"x\":3,\"n\":null}]}"),
    (
        "&4Nodem14kidsam25labels4nodet2i1^4Node",
        "{\"kids\":[{\"label\":\"a\",\"node\":[1,{\"kids\":[]}]},{\"label\":\"b\",\"node\":[2,{\"kids\":[]}]}]}",
    ),
    ("&1Rm11xat2bt2j^1R", "{\"x\":[[true,[5,{\"x\":[]}]],[false,[6,{\"x\":[[true,[7,{\"x\":[]}]]]}]]]}"),
    ("&1Mm21ki21vat2sa?^1M", "{\"k\":1,\"v\":[[\"s\",[null,{\"k\":2,\"v\":[]}]]]}"),
    (
        "&1Am21xj2bsa&1Bm21yt2i1^1A1zs",
        "{\"x\":1,\"bs\":[{\"y\":[3,{\"x\":2,\"bs\":[]}],\"z\":\"q\"}]}",
    ),
    ("t0", "[]"),
    ("m0", "{}"),
    ("az", "[null,null]"),
    ("at0", "[[],[]]"),
    ("ab", "[true,false]"),
    ("F", "\"/tmp/in\""),
    ("t2sF", "[\"abc\",\"/p\"]"),
];

#[test]
fn seeds_round_trip() {
    for (schema_text, json) in SEEDS {
        let schema = parse(schema_text).unwrap();
        let v = value(&schema, json);
        let blob = encode_flat(&schema, &v).unwrap_or_else(|e| panic!("{schema_text} {json}: {e}"));
        let back =
            decode_flat(&schema, &blob).unwrap_or_else(|e| panic!("{schema_text} {json}: {e}"));
        assert_eq!(
            json_of(&schema, &back),
            json_of(&schema, &v),
            "{schema_text}"
        );
        // A second encoding is identical.
        assert_eq!(encode_flat(&schema, &back).unwrap(), blob, "{schema_text}");
        // Rendering the blob straight to JSON gives the same text.
        let mut direct = String::new();
        flat_to_json(&schema, &blob, &mut direct)
            .unwrap_or_else(|e| panic!("{schema_text} {json}: {e}"));
        assert_eq!(direct, json_of(&schema, &v), "{schema_text}");
    }
}

#[track_caller]
fn check_decode_err(schema: &str, blob: &[u8], msg: &str) {
    let schema = parse(schema).unwrap();
    match decode_flat(&schema, blob) {
        Ok(v) => panic!("decoded {v:?}"),
        Err(e) => assert_eq!(e.to_string(), msg),
    }
}

#[test]
fn hostile_blobs_fail_cleanly() {
    check_decode_err(
        "j",
        &[1, 0, 0],
        "invalid voidstar data at byte 0: needs 5 bytes past the end of the region",
    );
    check_decode_err(
        "s",
        &cat(&[&le(100), &le(16)]),
        "invalid voidstar data at byte 16: needs 100 bytes past the end of the region",
    );
    check_decode_err(
        "s",
        &cat(&[&le(1), &le(99)]),
        "invalid voidstar data at byte 99: pointer 0x0000000000000063 does not resolve",
    );
    check_decode_err(
        "ai8",
        &cat(&[&le(u64::MAX), &le(16)]),
        "invalid voidstar data at byte 0: value exceeds the decoding size limit",
    );
    check_decode_err(
        "az",
        &cat(&[&le(1 << 40), &le(0)]),
        "invalid voidstar data at byte 0: value exceeds the decoding size limit",
    );
    // Within the budget, a list longer than its data is truncated.
    let blob = cat(&[&le(1 << 20), &le(16)]);
    let err = decode(&parse("ai8").unwrap(), &Flat(&blob), 0).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid voidstar data at byte 16: needs 8388608 bytes past the end of the region"
    );
    check_decode_err(
        "j",
        &cat(&[&le(1 << 40), &le(0)]),
        "invalid voidstar data at byte 0: length 1099511627776 is too large",
    );
    check_decode_err(
        "a:2i1",
        &cat(&[&le(3), &le(16), &[1, 2, 3]]),
        "invalid voidstar data at byte 0: list has 3 items, the schema requires 2",
    );
    check_decode_err(
        "F",
        &cat(&[&[1], &[0; 7], &le(5)]),
        "invalid voidstar data at byte 0: stream handle is a registry slot, not a path",
    );
    check_decode_err(
        "F",
        &cat(&[&[7], &[0; 7], &le(5)]),
        "invalid voidstar data at byte 0: unknown stream handle tag 7",
    );
    check_decode_err(
        "T",
        &[0; 16],
        "invalid voidstar data at byte 0: tables are not supported",
    );
    check_decode_err(
        "&1Am11x^1A",
        &[0; 16],
        "invalid schema: recursive type 'A' contains itself outside any list or optional, so it has no finite width",
    );
    // Aliased pointers: every list element points at the same list.
    let mut blob = cat(&[&le(64), &le(0)]);
    blob.resize(16 * 64, 0);
    for i in 0..64 {
        blob[16 * i..16 * i + 8].copy_from_slice(&le(64));
        blob[16 * i + 8..16 * i + 16].copy_from_slice(&le(0));
    }
    let schema = parse(&format!("{}j", "a".repeat(8))).unwrap();
    let err = decode_flat(&schema, &blob).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::OverBudget);
    // A self-referencing optional chain hits the depth limit.
    let schema = parse("&4Listm24headj4tail?^4List").unwrap();
    let blob = cat(&[&le(1), &le(5), &le(0)]);
    let err = decode_flat(&schema, &blob).unwrap_err();
    assert_eq!(err.kind, DecodeErrorKind::TooDeep);
}

#[test]
fn reads_go_through_memory() {
    // A two-region memory: relptr volume 1 maps to a second buffer.
    struct Two(Vec<u8>, Vec<u8>);
    impl Memory for Two {
        fn resolve(&self, relptr: i64) -> Result<&[u8], DecodeError> {
            let bad = DecodeError::new(relptr as u64, DecodeErrorKind::BadPointer(relptr));
            let region = match relptr >> 48 {
                0 => &self.0,
                1 => &self.1,
                _ => return Err(bad),
            };
            region
                .get((relptr as u64 & OFFSET_MASK) as usize..)
                .ok_or(bad)
        }
    }
    let mem = Two(
        cat(&[&[0; 8], &le(2), &le((1 << 48) | 4)]),
        b"....hi".to_vec(),
    );
    let schema = parse("s").unwrap();
    assert_eq!(
        decode(&schema, &mem, 8).unwrap(),
        Value::Str(b"hi".to_vec())
    );
    let err = decode(&schema, &mem, 1 << 49).unwrap_err();
    assert_eq!(
        err.to_string(),
        "invalid voidstar data at volume 2 byte 0: pointer 0x0002000000000000 does not resolve"
    );
}

#[test]
fn deep_values_do_not_overflow_the_stack() {
    // Each list cell is two levels (record, optional), and serde_json
    // itself stops parsing at 128 levels.
    let schema = parse("&4Listm24headj4tail?^4List").unwrap();
    let mut json = String::from("null");
    for i in 0..120 {
        json = format!("{{\"head\":{i},\"tail\":{json}}}");
    }
    let v = value(&schema, &json);
    let blob = encode_flat(&schema, &v).unwrap();
    let back = decode_flat(&schema, &blob).unwrap();
    assert_eq!(json_of(&schema, &back), json_of(&schema, &v));
}
