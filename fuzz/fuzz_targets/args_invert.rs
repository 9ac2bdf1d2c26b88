//! `tools/call` arguments: resolving arbitrary JSON params against the test
//! program's tool surface never panics, and a resolved call has one value per
//! manifest argument.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use morloc_mcp::{protocol::args, format::manifest::Manifest, protocol::tools};

const SHAPES: &str = include_str!("../../tests/data/shapes/manifest.json");

fn fixture() -> &'static (Manifest, tools::Surface) {
    static FIXTURE: OnceLock<(Manifest, tools::Surface)> = OnceLock::new();
    FIXTURE.get_or_init(|| {
        let manifest =
            Manifest::from_json(SHAPES, &mut Vec::new()).expect("the shapes fixture loads");
        let surface = tools::build(&manifest);
        (manifest, surface)
    })
}

fuzz_target!(|data: &[u8]| {
    let (manifest, surface) = fixture();
    let Ok(params) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    // The first byte also decides whether the params key is absent.
    let params = if data.first() == Some(&b' ') {
        None
    } else {
        Some(&params)
    };
    if let Ok(call) = args::resolve(surface, params) {
        let tool = &surface.tools[call.tool];
        assert_eq!(call.args.len(), manifest.commands[tool.command].args.len());
    }
});
