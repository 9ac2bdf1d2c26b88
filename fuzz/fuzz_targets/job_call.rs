//! Job tool calls (`--job-tools`): a `tools/call` of a job tool, read as a
//! stdio line would be, never panics; it becomes a job request with a
//! non-empty job id or an answer; a job request's `Mcp-Param-Job-Id` check
//! passes only for a header that decodes to its job id. The input is split
//! at the first NUL byte: the message, then the header value.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::format::manifest::{Loaded, Manifest};
use morloc_mcp::protocol::jsonrpc;
use morloc_mcp::protocol::mcp::{self, headers, jobs, Catalog, Program, Session, Step, TaskMethod};
use morloc_mcp::protocol::tools;

const SHAPES: &str = include_str!("../../tests/data/shapes/manifest.json");

fuzz_target!(|data: &[u8]| {
    let (line, header) = match data.iter().position(|&b| b == 0) {
        Some(i) => (&data[..i], &data[i + 1..]),
        None => (data, &[][..]),
    };
    let manifest = Manifest::from_json(SHAPES, &mut Vec::new()).expect("shapes loads");
    let surface = tools::build(&manifest);
    let loaded = Loaded {
        manifest,
        path: "/m/manifest.json".into(),
        dir: "/m".into(),
        tools_file: "/m/morloc-mcp-tools.json".into(),
        tools_file_given: false,
    };
    let program = Program::new(loaded, surface).expect("shapes compiles");
    let mut catalog = Catalog::single(program);
    catalog.set_job_tools(true).expect("no shapes tool is named as a job tool");
    let mut session = Session {
        initialized: true,
        protocol_version: Some(mcp::DEFAULT_VERSION.into()),
        log_level: None,
    };
    let (msg, arguments) = jsonrpc::decode_lazy(line);
    let step = mcp::handle_lazy(&catalog, &mut session, msg, arguments);
    let Step::Task(request) = step else {
        return;
    };
    if let TaskMethod::Job { .. } = request.method {
        assert!(!request.task_id.is_empty(), "a job request without a job id");
        let header = String::from_utf8_lossy(header);
        if jobs::check_param_header(&request.task_id, Some(&header)).is_ok() {
            assert_eq!(headers::decode_value(&header).as_deref(), Ok(request.task_id.as_str()));
        }
    }
});
