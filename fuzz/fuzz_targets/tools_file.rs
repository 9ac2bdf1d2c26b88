//! Tools files: any text either parses or is refused with a message, and a
//! parsed file applied to the shapes program either curates its surface or
//! is refused, leaving the surface as it was; a curated surface keeps every
//! tool name unique and every scope an OAuth scope token.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::format::manifest::Manifest;
use morloc_mcp::protocol::tools::{self, curate};

const SHAPES: &str = include_str!("../../tests/data/shapes/manifest.json");

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(curation) = curate::parse(text) else {
        return;
    };
    let manifest = Manifest::from_json(SHAPES, &mut Vec::new()).expect("shapes loads");
    let mut surface = tools::build(&manifest);
    let before: Vec<String> = surface.tools.iter().map(|t| t.json.to_string()).collect();
    match curate::apply(&mut surface, &manifest, &curation) {
        Ok(()) => {
            let mut names: Vec<&str> = surface.tools.iter().map(|t| t.name.as_str()).collect();
            names.sort_unstable();
            let count = names.len();
            names.dedup();
            assert_eq!(names.len(), count, "duplicate tool names");
            for scope in surface.tools.iter().flat_map(|t| &t.scopes) {
                let token = |c: char| c.is_ascii_graphic() && c != '"' && c != '\\';
                assert!(!scope.is_empty() && scope.chars().all(token), "{scope:?}");
            }
        }
        Err(e) => {
            assert!(!e.message.is_empty());
            let after: Vec<String> = surface.tools.iter().map(|t| t.json.to_string()).collect();
            assert_eq!(before, after, "a refused file changed the surface");
        }
    }
});
