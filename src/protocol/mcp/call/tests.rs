//! The call pipeline without sockets: request to packet, reply bytes to the
//! response of either era, failures included (the shapes test program).

use std::path::PathBuf;

use serde_json::{json, Value as Json};

use super::*;
use crate::format::schema::parse;
use crate::format::voidstar::Flat;
use crate::protocol::mcp::{handle, handle_lazy, shapes_program, Session, Step, DEFAULT_VERSION};

/// File access a pure command must not need here.
struct NoFiles;

impl eval::Host for NoFiles {
    fn read_file(&mut self, path: &str, _: u64) -> std::io::Result<Vec<u8>> {
        panic!("unexpected read of {path}")
    }

    fn write_file_atomic(&mut self, path: &str, _: &[u8]) -> std::io::Result<()> {
        panic!("unexpected write of {path}")
    }
}

fn catalog() -> Catalog {
    Catalog::single(shapes_program())
}

/// The `CallRequest` of a `tools/call` line, decoded as a typed tree
/// (`lazy` false) or with its arguments kept as text.
fn request(catalog: &Catalog, tool: &str, arguments: &str, lazy: bool) -> CallRequest {
    let line = format!(
        r#"{{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
    );
    let mut session = Session {
        initialized: true,
        protocol_version: Some(DEFAULT_VERSION.into()),
        log_level: None,
    };
    let step = if lazy {
        let (msg, args) = jsonrpc::decode_lazy(line.as_bytes());
        handle_lazy(catalog, &mut session, msg, args)
    } else {
        handle(catalog, &mut session, jsonrpc::decode(line.as_bytes()))
    };
    match step {
        Step::Call(call) => call,
        other => panic!("{line}: {other:?}"),
    }
}

fn prepared(catalog: &Catalog, tool: &str, arguments: &str, lazy: bool) -> Prepared {
    let mut call = request(catalog, tool, arguments, lazy);
    prepare(&catalog.programs[0], &mut call, &mut NoFiles)
}

fn text_result(text: &str, is_error: bool) -> Json {
    json!({"content": [{"type": "text", "text": text}], "isError": is_error})
}

/// A typed value's result as a call ends with it: its text, and the
/// `structuredContent` placeholder each era settles.
fn typed_result(text: &str) -> Json {
    let mut result = serde_json::Map::new();
    result.insert("content".into(), json!([{"type": "text", "text": text}]));
    structured::mark(&mut result, false);
    assert!(result.contains_key(structured::KEY));
    result.insert("isError".into(), Json::Bool(false));
    Json::Object(result)
}

fn command(catalog: &Catalog, name: &str) -> usize {
    let commands = &catalog.programs[0].loaded.manifest.commands;
    commands.iter().position(|c| c.name == name).expect(name)
}

#[test]
fn a_remote_call_becomes_its_call_packet_typed_or_from_text() {
    let catalog = catalog();
    let schema = parse("j").unwrap();
    let blob = voidstar::encode_flat(&schema, &Value::Int(41)).unwrap();
    let want = packet::call_packet(
        1,
        &[packet::data_packet_voidstar(
            &schema.to_wire_string(),
            &blob,
        )],
    );
    for lazy in [false, true] {
        match prepared(&catalog, "addOne", r#"{"_1":41}"#, lazy) {
            Prepared::Remote(packet) => assert_eq!(packet, want, "lazy {lazy}"),
            other => panic!("lazy {lazy}: {other:?}"),
        }
    }
    // Two slots, one of them an option with its default.
    let Prepared::Remote(packet) = prepared(&catalog, "scale", r#"{"_1":3}"#, false) else {
        panic!("scale is remote");
    };
    let call = packet::parse_call(&packet).unwrap();
    assert_eq!(call.args.len(), 2);
}

#[test]
fn refused_arguments_and_pure_commands_are_answered_at_once() {
    let catalog = catalog();
    let refused = prepared(&catalog, "addOne", r#"{"_1":"one"}"#, false);
    let message = "argument '_1': expected an integer, got \"one\"";
    assert_eq!(refused, Prepared::Answered(Ending::Error(message.into())));
    let answer = prepared(&catalog, "pureAnswer", "{}", false);
    assert_eq!(
        answer,
        Prepared::Answered(Ending::Result(typed_result("42")))
    );
    let thrown = prepared(&catalog, "mustFail", r#"{"_1":1}"#, false);
    assert_eq!(
        thrown,
        Prepared::Answered(Ending::Error("intentional failure: boom".into()))
    );
}

/// The result of reply packet `bytes` to command `name`.
fn reply(catalog: &Catalog, name: &str, bytes: &[u8]) -> Result<Json, String> {
    let reply = packet::parse_reply(bytes).map_err(|e| e.to_string())?;
    let program = &catalog.programs[0];
    settled(reply_result(
        program,
        command(catalog, name),
        reply,
        &Flat(&[]),
    ))
}

/// A reply's ending as the result it gives, or its refusal.
fn settled(ending: Ending) -> Result<Json, String> {
    match ending {
        Ending::Result(result) => Ok(result),
        Ending::Text(result) => Ok(result.into_json()),
        Ending::Error(message) | Ending::Failed(message) => Err(message),
    }
}

fn voidstar_reply(schema: &str, value: &Value) -> Vec<u8> {
    let schema = parse(schema).unwrap();
    let blob = voidstar::encode_flat(&schema, value).unwrap();
    packet::data_packet_voidstar(&schema.to_wire_string(), &blob)
}

#[test]
fn replies_become_results() {
    let catalog = catalog();
    let two = voidstar_reply("j", &Value::Int(2));
    assert_eq!(reply(&catalog, "addOne", &two), Ok(typed_result("2")));
    // A record also comes back as `structuredContent`, parsed for a legacy
    // answer.
    let record = Value::Record(vec![Value::Str(b"ok".to_vec()), Value::Int(5)]);
    let rec = voidstar_reply("m26statuss5valuej", &record);
    let mut got = reply(&catalog, "mkResult", &rec);
    if let Ok(result) = &mut got {
        structured::for_era(result, false);
    }
    assert_eq!(
        got,
        Ok(json!({
            "content": [{"type": "text", "text": r#"{"status":"ok","value":5}"#}],
            "structuredContent": {"status": "ok", "value": 5},
            "isError": false
        }))
    );
    let failed = packet::fail_packet("ValueError: no");
    assert_eq!(
        reply(&catalog, "addOne", &failed),
        Ok(text_result("ValueError: no", true))
    );
    // A blob too short for the head of an Int.
    let short = packet::data_packet_voidstar("j", &[1, 2]);
    let message = reply(&catalog, "addOne", &short).unwrap_err();
    assert!(
        message.starts_with("cannot decode the result of 'addOne': "),
        "{message}"
    );
}

#[test]
fn a_result_files_bytes_decode_as_its_msgpack_value_and_an_unread_file_is_refused() {
    let catalog = catalog();
    let program = &catalog.programs[0];
    let addone = command(&catalog, "addOne");
    let data = msgpack::encode(&parse("j").unwrap(), &Value::Int(9)).unwrap();
    let got = settled(reply_result(
        program,
        addone,
        Reply::Msgpack(&data),
        &Flat(&[]),
    ));
    assert_eq!(got, Ok(typed_result("9")));
    let file = Reply::File(PathBuf::from("/r/2.mpk"));
    let got = settled(reply_result(program, addone, file, &Flat(&[])));
    assert_eq!(got, Err("the result file /r/2.mpk was not read".into()));
}

#[test]
fn endings_become_responses_of_either_era() {
    let catalog = catalog();
    let id = RequestId::Int("7".into());
    let legacy = respond(
        &catalog,
        &id,
        false,
        Ending::Result(text_result("2", false)),
    );
    assert_eq!(
        legacy.into_message(),
        json!({"jsonrpc": "2.0", "id": 7, "result": text_result("2", false)})
    );
    let legacy = respond(
        &catalog,
        &id,
        false,
        Ending::Result(text_result("2", false)),
    );
    assert_eq!((legacy.is_modern(), legacy.http_status()), (false, 200));
    let modern = respond(&catalog, &id, true, Ending::Result(text_result("2", false)));
    let mut result = text_result("2", false);
    result["resultType"] = json!("complete");
    result["_meta"] = json!({SERVER_INFO: {"name": "main", "version": "0.98.2"}});
    assert_eq!((modern.is_modern(), modern.http_status()), (true, 200));
    assert_eq!(
        modern.into_message(),
        json!({"jsonrpc": "2.0", "id": 7, "result": result})
    );
    // A typed value: none in a legacy answer, the raw value in a modern one.
    let legacy = respond(&catalog, &id, false, Ending::Result(typed_result("[2]")));
    assert_eq!(legacy.into_message()["result"], text_result("[2]", false));
    let modern = respond(&catalog, &id, true, Ending::Result(typed_result("[2]")));
    let written: Json =
        serde_json::from_slice(&structured::to_vec(&modern.into_message())).unwrap();
    assert_eq!(written["result"]["structuredContent"], json!([2]));
    assert_eq!(written["result"]["content"][0]["text"], "[2]");
    // A task (modern only) keeps it for `tasks/get`.
    let Outcome::Completed(task) = Ending::Result(typed_result("[2]")).into_task_outcome() else {
        panic!("a typed result completes its task");
    };
    assert!(structured::is_marked(&task));
    // A failure of the call itself: an `isError` result for its client...
    let timeout = "timed out after 1 s waiting for pool 'py'";
    let failed = respond(&catalog, &id, false, Ending::Failed(timeout.into()));
    assert_eq!(failed.into_message()["result"], text_result(timeout, true));
    // ...but a failed task, where a refused reply completes it.
    assert_eq!(
        Ending::Failed(timeout.into()).into_task_outcome(),
        Outcome::Failed(-32603, timeout.into())
    );
    assert_eq!(
        Ending::Error("bad reply".into()).into_task_outcome(),
        Outcome::Completed(text_result("bad reply", true))
    );
    assert_eq!(
        Ending::from(Err::<Json, _>("x".to_string())),
        Ending::Error("x".into())
    );
}

const SERVER_INFO: &str = crate::protocol::mcp::era::SERVER_INFO_KEY;

#[test]
fn layouts_are_compiled_once_with_the_program() {
    let catalog = catalog();
    let program = &catalog.programs[0];
    let compiled = program.compiled(command(&catalog, "sumPoints"));
    let form = compiled.slots[0].form().unwrap();
    assert_eq!(compiled.slots[0].name, "_1");
    assert_eq!(form.wire, form.schema.to_wire_string());
    assert!(form.layout.is_ok() && matches!(compiled.ret, Some(Ok(_))));
    let pure = program.compiled(command(&catalog, "mustFail"));
    assert_eq!(pure.eval_schemas, [parse("j").unwrap()]);
    // An `Int` is arbitrary-precision, a `Real` 8 bytes.
    assert!(!program
        .compiled(command(&catalog, "addOne"))
        .always_inline(1 << 16));
    let real = program.compiled(command(&catalog, "scaleReal"));
    assert!(real.always_inline(8) && !real.always_inline(7));
}

/// A text result written straight from its text gives the bytes of its
/// message written by `structured::write`, in both eras, for any id, text
/// and kind of `structuredContent`.
#[test]
fn text_results_are_written_as_their_messages() {
    let mut catalog = catalog();
    let ids = [
        RequestId::Int("7".into()),
        RequestId::Int("-0".into()),
        RequestId::Int("123456789012345678901234567890".into()),
        RequestId::Str(String::new()),
        RequestId::Str("a\"b\\c\u{1}\u{7f}é😀/".into()),
    ];
    let texts = [
        "42",
        "",
        "[1,2.5e3,\"x\"]",
        r#"{"status":"ok","value":5}"#,
        r#"{"a":{"b":[1,{"c":null}]},"d":"\u00e9\n"}"#,
        "not json \" \\ \n\t\u{0}\u{1f}",
        r#"{"a":1}x"#,
        "\"\u{2028}é😀\"",
    ];
    for (name, version) in [("main", "0.98.2"), ("n\"a\\me", "")] {
        catalog.server_name = name.into();
        catalog.server_version = version.into();
        for id in &ids {
            for text in texts {
                for structured in [None, Some(false), Some(true)] {
                    for modern in [false, true] {
                        let result = results::TextResult {
                            text: text.into(),
                            structured,
                        };
                        let reply = respond(&catalog, id, modern, Ending::Text(result.clone()));
                        let mut direct = Vec::new();
                        reply.write(&mut direct);
                        assert_eq!(reply.length(), direct.len(), "{id} {text:?}");
                        let old = respond(&catalog, id, modern, Ending::Result(result.into_json()));
                        assert_eq!(reply.http_status(), old.http_status());
                        assert_eq!(reply.outcome(), old.outcome());
                        let message = old.into_message();
                        assert_eq!(
                            String::from_utf8(direct).unwrap(),
                            structured::to_string(&message),
                            "{id} {text:?} {structured:?} modern {modern}"
                        );
                        assert_eq!(reply.into_message(), message);
                    }
                }
            }
        }
    }
}
