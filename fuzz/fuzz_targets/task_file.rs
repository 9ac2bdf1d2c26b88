//! `--task-dir` files: reading arbitrary bytes as a stored task never panics,
//! and a task that reads back is stored again as the same task.
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::mcp::tasks;

fuzz_target!(|data: &[u8]| {
    if let Ok(task) = tasks::from_stored(data) {
        let again = tasks::to_stored(&task).to_string();
        assert_eq!(tasks::from_stored(again.as_bytes()), Ok(task));
    }
});
