//! Tests of the data intrinsics (`@show`, `@read`, `@hash`, `@save`,
//! `@load`) and of the refused file and stream intrinsics.

use super::*;

#[test]
fn show_read_and_hash() {
    check(
        unary("show", "s", container("m11xj", vec![int(1)])),
        &[],
        "s",
        r#""{\"x\":1}""#,
    );
    check(unary("show", "s", s("a\"b")), &[], "s", r#""\"a\\\"b\"""#);
    check(unary("read", "aj", s("[1, 2]")), &[], "aj", "[1,2]");
    check(
        unary("read", "m11xj", s(r#" {"x": 5} "#)),
        &[],
        "m11xj",
        r#"{"x":5}"#,
    );
    check(
        unary("read", "j", s("")),
        &[],
        "j",
        "User: @read: empty input string",
    );
    check(
        unary("read", "j", s("[")),
        &[],
        "j",
        "User: EOF while parsing a list at line 1 column 1",
    );
    check(
        unary("hash", "s", lit("i4", "42")),
        &[],
        "s",
        "\"28c71650acc0b031\"",
    );
    check(
        unary("hash", "s", s("abc")),
        &[],
        "s",
        "\"0bad903b9314fc72\"",
    );
    check(
        unary("hash", "s", lambda(&["x"], int(1))),
        &[],
        "s",
        "Internal: a lambda node can only be applied, not evaluated as a value",
    );
    // A value that does not match its node schema never reaches a codec.
    check(
        unary("show", "s", bound("x", "s")),
        &[],
        "s",
        "Internal: Unbound variable x",
    );
    let mismatch = let_in("x", int(1), "s", unary("show", "s", bound("x", "s")));
    check(
        mismatch,
        &[],
        "s",
        "Internal: @show: value does not match its schema s: expected s, got Int",
    );
}

fn save(format: &str, level: Json, value: Json, path: &str) -> Json {
    json!({"tag": "save", "format": format, "schema": "z", "level": level, "value": value, "path": s(path)})
}

#[test]
fn save_and_load_round_trip() {
    let mut host = MemHost::default();
    let limits = Limits::default();
    let mut go = |expr: Json, ret: &str| outcome(&expr, &[], ret, &mut host, limits);
    assert_eq!(
        go(
            save(
                "json",
                int(0),
                container("am11xj", vec![container("m11xj", vec![int(1)])]),
                "a.json"
            ),
            "z"
        ),
        "null"
    );
    assert_eq!(
        go(unary("load", "am11xj", s("a.json")), "am11xj"),
        r#"[{"x":1}]"#
    );
    assert_eq!(
        go(save("msgpack", int(9), lit("i4", "7"), "b.mpk"), "z"),
        "null"
    );
    assert_eq!(go(unary("load", "i4", s("b.mpk")), "i4"), "7");
    assert_eq!(
        go(save("voidstar", int(0), lit("i4", "42"), "c.dat"), "z"),
        "null"
    );
    assert_eq!(go(unary("load", "i4", s("c.dat")), "i4"), "42");
    assert_eq!(
        go(save("voidstar", int(0), s("text"), "d.dat"), "z"),
        "null"
    );
    assert_eq!(go(unary("load", "s", s("d.dat")), "s"), "\"text\"");
    assert_eq!(
        go(unary("load", "j", s("c.dat")), "j"),
        "User: @load: schema mismatch reading 'c.dat': file has schema `i4`, requested `j`"
    );
    assert_eq!(
        go(unary("load", "j", s("nope")), "j"),
        "User: @load: failed to load 'nope'"
    );
    assert_eq!(go(catch(unary("load", "j", s("nope")), int(5)), "j"), "5");
    assert_eq!(
        go(save("voidstar", int(3), int(1), "e.dat"), "z"),
        "User: @save: compression is not supported (level 3)"
    );
    assert_eq!(
        go(save("json", int(12), int(1), "e.json"), "z"),
        "Internal: @save compression level must be in 0..=9, got 12"
    );
    assert_eq!(
        go(save("json", int(-1), int(1), "e.json"), "z"),
        "Internal: @save compression level must be in 0..=9, got -1"
    );
    let refuse = |expr: Json| outcome(&expr, &[], "z", &mut MemHost::default(), limits);
    assert_eq!(refuse(save("json", int(0), int(1), "x")), "null");
    let got = run(
        &compile(&save("json", int(0), int(1), "x")).unwrap(),
        &[],
        vec![],
        &Schema::Nil,
        &mut NoFiles,
    );
    assert_eq!(
        got.unwrap_err().message,
        "@save(json): cannot write 'x': file access is disabled: x"
    );
    // The voidstar file is a complete MESG + VOIDSTAR data packet.
    let packet = &host.files["c.dat"];
    assert_eq!(packet[..4], [0x6d, 0xf8, 0x07, 0x07]);
    assert_eq!(packet[12..16], [0, 0, 4, 0]);
    assert_eq!(packet[32..43], *b"mmh\x01\x03\x00\x00\x00i4\x00");
    assert_eq!(packet[64..], [42, 0, 0, 0]);
}

#[test]
fn load_detects_formats() {
    let mut host = MemHost::default();
    let files: &[(&str, &[u8])] = &[
        ("note.txt", b"hello world\n"),
        ("quoted.txt", b"  \"quoted\"  "),
        ("nums", b"[1,2,3]"),
        ("digit", b"7"),
        ("inf.txt", b"\\-inf\n"),
        ("empty", b""),
        ("mpk", &[0xa2, b'h', b'i']),
        (
            "stream.pkt",
            &[
                0x6d, 0xf8, 0x07, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            "zstd.pkt",
            &[
                0x6d, 0xf8, 0x07, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 1, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            "short.pkt",
            &[
                0x6d, 0xf8, 0x07, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                9, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
        (
            "call.pkt",
            &[
                0x6d, 0xf8, 0x07, 0x07, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
                0, 0, 0, 0, 0, 0, 0, 0,
            ],
        ),
    ];
    for (name, bytes) in files {
        host.files.insert(name.to_string(), bytes.to_vec());
    }
    let mut go = |path: &str, ret: &str| {
        outcome(
            &unary("load", ret, s(path)),
            &[],
            ret,
            &mut host,
            Limits::default(),
        )
    };
    assert_eq!(go("note.txt", "s"), "\"hello world\"");
    assert_eq!(go("note.txt", "?s"), "\"hello world\"");
    assert_eq!(go("quoted.txt", "s"), "\"quoted\"");
    assert_eq!(go("nums", "aj"), "[1,2,3]");
    assert_eq!(go("digit", "j"), "7");
    assert_eq!(go("mpk", "s"), "\"hi\"");
    // The rest of the message is the msgpack decoder's.
    let wrong_type = go("mpk", "j");
    assert!(
        wrong_type.starts_with("User: @load: cannot read 'mpk' as msgpack: "),
        "{wrong_type}"
    );
    assert_eq!(go("empty", "j"), "User: @load: 'empty' is empty");
    assert_eq!(
        go("stream.pkt", "aj"),
        "User: @load: 'stream.pkt' is a stream file; streams are not supported by this server"
    );
    assert_eq!(go("zstd.pkt", "j"), "User: @load: 'zstd.pkt' is compressed; compressed packets are not supported by this server");
    assert_eq!(
        go("short.pkt", "j"),
        "Packet: packet error: data packet in 'short.pkt' is truncated"
    );
    assert_eq!(
        go("call.pkt", "j"),
        "User: Expected data packet in 'call.pkt'"
    );
    let inf = run(
        &compile(&unary("load", "f8", s("inf.txt"))).unwrap(),
        &[],
        vec![],
        &parse_schema("f8"),
        &mut host,
    );
    assert!(inf.is_err() || inf == Ok(Value::Float(f64::NEG_INFINITY)));
}

#[test]
fn file_and_stream_intrinsics_are_refused() {
    let open = json!({"tag": "open", "schema": "F", "kind": 0, "path": s("/tmp/x")});
    check(
        open.clone(),
        &[],
        "F",
        "User: open: file and stream handles are not supported by this server",
    );
    check(
        catch(
            open,
            json!({"tag": "str", "schema": "F", "value": "fallback"}),
        ),
        &[],
        "F",
        "\"fallback\"",
    );
    check(
        json!({"tag": "stdout", "schema": "aj"}),
        &[],
        "O",
        "User: stdout: file and stream handles are not supported by this server",
    );
}

#[test]
fn recursive_records_through_tuples_in_lists() {
    // Issue #11: `Trie a = {val: ?a, subs: [(Str, Trie a)]}`, whose
    // recursion runs through a tuple inside a list, through every codec the
    // evaluator reaches.
    const TRIE: &str = "&4Trie<dict>m23val?j4subsat2s^4Trie";
    let trie = r#"{"val":null,"subs":[["L",{"val":0,"subs":[]}],["R",{"val":5,"subs":[]}]]}"#;
    let arg = [(TRIE, trie)];
    check(lambda(&["t"], bound("t", TRIE)), &arg, TRIE, trie);
    let shown = lambda(&["t"], unary("show", "s", bound("t", TRIE)));
    check(
        shown.clone(),
        &arg,
        "s",
        &serde_json::to_string(trie).unwrap(),
    );
    let read_back = lambda(
        &["t"],
        unary("read", TRIE, unary("show", "s", bound("t", TRIE))),
    );
    check(read_back, &arg, TRIE, trie);
    // `@hash` walks the recursion too, and tells the two tries apart.
    let hash = lambda(&["t"], unary("hash", "s", bound("t", TRIE)));
    let other = r#"{"val":null,"subs":[["L",{"val":0,"subs":[]}],["R",{"val":6,"subs":[]}]]}"#;
    let mut host = MemHost::default();
    let limits = Limits::default();
    let h1 = outcome(&hash, &arg, "s", &mut host, limits);
    let h2 = outcome(&hash, &[(TRIE, other)], "s", &mut host, limits);
    assert!(h1.starts_with('"') && h1.len() == 18, "{h1}");
    assert_ne!(h1, h2);
    // Saved and loaded in each file format.
    for (format, path) in [
        ("json", "t.json"),
        ("msgpack", "t.mpk"),
        ("voidstar", "t.dat"),
    ] {
        let saved = lambda(&["t"], save(format, int(0), bound("t", TRIE), path));
        assert_eq!(
            outcome(&saved, &arg, "z", &mut host, limits),
            "null",
            "{format}"
        );
        let loaded = unary("load", TRIE, s(path));
        assert_eq!(
            outcome(&loaded, &[], TRIE, &mut host, limits),
            trie,
            "{format}"
        );
    }
    // A pattern reaches into the record.
    let subs = lambda(
        &["t"],
        app(
            "at2s&4Triem23val?j4subsat2s^4Trie",
            pattern(
                "at2s&4Triem23val?j4subsat2s^4Trie",
                key(vec![("subs", end())]),
            ),
            vec![bound("t", TRIE)],
        ),
    );
    check(
        subs,
        &arg,
        "at2s&4Triem23val?j4subsat2s^4Trie",
        r#"[["L",{"val":0,"subs":[]}],["R",{"val":5,"subs":[]}]]"#,
    );
}
