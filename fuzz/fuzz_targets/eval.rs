//! Fuzz the pure evaluator: any JSON tree either fails to compile or runs to
//! a result or an error, without panicking or hanging.

#![no_main]

use std::collections::HashMap;
use std::io;

use libfuzzer_sys::fuzz_target;
use morloc_mcp::format::eval::{self, Host, Limits};
use morloc_mcp::format::schema::Schema;

/// Files in memory, so `@save` followed by `@load` is exercised too.
#[derive(Default)]
struct MemHost {
    files: HashMap<String, Vec<u8>>,
}

impl Host for MemHost {
    fn read_file(&mut self, path: &str, limit: u64) -> io::Result<Vec<u8>> {
        let bytes = self.files.get(path).ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))?;
        if bytes.len() as u64 > limit {
            return Err(io::ErrorKind::FileTooLarge.into());
        }
        Ok(bytes.clone())
    }

    fn write_file_atomic(&mut self, path: &str, bytes: &[u8]) -> io::Result<()> {
        // Bound what an input can store.
        if self.files.len() < 16 && bytes.len() < 1 << 20 {
            self.files.insert(path.to_string(), bytes.to_vec());
        }
        Ok(())
    }
}

fuzz_target!(|data: &[u8]| {
    let Ok(json) = serde_json::from_slice::<serde_json::Value>(data) else {
        return;
    };
    let Ok(expr) = eval::compile(&json) else {
        return;
    };
    // A small budget keeps every input fast; that limits are enforced at all
    // is part of what is under test.
    let limits = Limits { max_depth: 256, max_steps: 200_000 };
    let mut host = MemHost::default();
    for ret in [Schema::Nil, Schema::Str] {
        let _ = eval::run_with_limits(&expr, &[], Vec::new(), &ret, &mut host, limits);
    }
});
