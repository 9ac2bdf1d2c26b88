//! The plumbing of `make test-real` that runs without a Morloc
//! installation: `tests/real/run.sh` skips in one line when the
//! installation or the compiler is missing, and `tests/real/compile.sh`
//! compiles the suite's own programs into a cache once, with a stand-in
//! `morloc` on `PATH` that records its calls.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::util::{self, Output, TempDir};

fn script(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/real")
        .join(name)
}

/// A `bin` directory in `dir` with the tools the scripts use, found on
/// the current `PATH`, and nothing else (so no `morloc`).
fn tool_dir(dir: &TempDir) -> PathBuf {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).expect("create bin");
    let path = std::env::var_os("PATH").unwrap_or_default();
    for tool in [
        "sh",
        "dirname",
        "basename",
        "python3",
        "tail",
        "mkdir",
        "rm",
        "cp",
        "mv",
        "ln",
        "find",
        "sort",
        "cat",
        "sha256sum",
        "cut",
    ] {
        let found = if tool == "python3" {
            // The interpreter itself: `python3` on PATH may be a launcher
            // script that needs more of PATH.
            let out = util::output(
                Command::new("python3").args(["-c", "import sys; print(sys.executable)"]),
            );
            PathBuf::from(out.stdout.trim_end())
        } else {
            std::env::split_paths(&path)
                .map(|p| p.join(tool))
                .find(|p| p.is_file())
                .unwrap_or_else(|| panic!("{tool} is not on PATH"))
        };
        dir.symlink(&found, &format!("bin/{tool}"));
    }
    bin
}

fn sh(script: &Path, args: &[&Path], env: &[(&str, &Path)]) -> Output {
    let mut command = Command::new("sh");
    command.arg(script).args(args);
    for (key, value) in env {
        command.env(key, value);
    }
    util::output(&mut command)
}

#[test]
fn without_an_installation_test_real_skips_in_one_line() {
    let dir = TempDir::new();
    let bin = tool_dir(&dir);
    let missing = dir.join("no-morloc-here");
    let no_root = dir.join("no-root-here");
    let out = sh(
        &script("run.sh"),
        &[],
        &[
            ("MORLOC_HOME", &missing),
            ("MORLOC_ROOT", &no_root),
            ("PATH", &bin),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    assert_eq!(
        lines[0],
        format!(
            "test-real: skipped: no usable Morloc installation at {m} (no such directory {m}; MORLOC_HOME \
             names another); no root directory {r} (MORLOC_ROOT names another)",
            m = missing.display(),
            r = no_root.display()
        ),
        "{out:?}"
    );
}

#[test]
fn a_root_without_an_installation_is_named_in_the_skip_line() {
    let dir = TempDir::new();
    let bin = tool_dir(&dir);
    let missing = dir.join("no-morloc-here");
    // A root directory with no installation inside it; its superuser's
    // home says where one would be.
    dir.write("root/etc/passwd", "admin:x:0:0::/srv/admin:/bin/sh\n");
    let root = dir.join("root");
    let out = sh(
        &script("run.sh"),
        &[],
        &[
            ("MORLOC_HOME", &missing),
            ("MORLOC_ROOT", &root),
            ("PATH", &bin),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    let lines: Vec<&str> = out.stdout.lines().collect();
    assert_eq!(lines.len(), 1, "{out:?}");
    // Inside a root the installation is at its default place; serving
    // there needs chroot, so root (the check says which it met first).
    let inner = root.join("srv/admin/.local/share/morloc");
    let why = if unsafe { libc::geteuid() } == 0 {
        format!("no such directory {}", inner.display())
    } else {
        "serving inside it needs chroot, which needs root".to_string()
    };
    assert!(
        lines[0].starts_with("test-real: skipped: no usable Morloc installation at ")
            && lines[0].ends_with(&format!("; nor in the root {} ({why})", root.display())),
        "{out:?}"
    );
}

#[test]
fn without_the_compiler_test_real_skips_in_one_line() {
    let dir = TempDir::new();
    let bin = tool_dir(&dir);
    // Just enough of an installation for run.sh's checks.
    let home = dir.join("morloc-home");
    dir.write("morloc-home/lib/libmorloc.so", "");
    dir.write("morloc-home/opt/pymorloc.py", "");
    dir.write(
        "morloc-home/src/morloc/plane/default/root-py/package.yaml",
        "",
    );
    let no_root = dir.join("no-root-here");
    let out = sh(
        &script("run.sh"),
        &[],
        &[
            ("MORLOC_HOME", &home),
            ("MORLOC_ROOT", &no_root),
            ("PATH", &bin),
        ],
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(
        out.stdout.trim_end(),
        format!(
            "test-real: skipped: no usable Morloc installation at {} (the morloc compiler is not on \
             PATH; MORLOC_HOME names another); no root directory {} (MORLOC_ROOT names another)",
            home.display(),
            no_root.display()
        ),
        "{out:?}"
    );
}

/// A stand-in compiler: `--version` prints a version, `make -o nexus X.loc`
/// writes `nexus-build/manifest.json` naming X and appends X to `calls`;
/// with `fail` it prints an error and exits 1.
fn fake_morloc(dir: &TempDir, fail: bool) -> PathBuf {
    let calls = dir.join("calls");
    let body = if fail {
        "echo 'workbench.loc:3: parse error' >&2; exit 1".to_string()
    } else {
        format!(
            "[ \"$1 $2 $3\" = \"make -o nexus\" ] || exit 2\n\
             mkdir -p nexus-build && printf '{{\"from\":\"%s\"}}' \"$4\" > nexus-build/manifest.json\n\
             echo \"$4\" >> '{}'",
            calls.display()
        )
    };
    dir.write_executable(
        "bin/morloc",
        format!("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'morloc 0.98.2 (stand-in)'; exit 0; fi\n{body}\n"),
    );
    calls
}

#[test]
fn compile_sh_compiles_each_program_once_into_the_cache() {
    let dir = TempDir::new();
    let bin = tool_dir(&dir);
    let calls = fake_morloc(&dir, false);
    let source = dir.join("src/workbench");
    for file in ["workbench.loc", "workbench.py"] {
        let text = util::read(&script("programs/workbench").join(file));
        dir.write(&format!("src/workbench/{file}"), text);
    }
    let cache = dir.join("cache");
    let compile = || {
        let out = sh(&script("compile.sh"), &[&cache, &source], &[("PATH", &bin)]);
        assert_eq!(out.code, Some(0), "{out:?}");
        out
    };

    let first = compile();
    assert_eq!(
        first.stdout.trim_end(),
        cache.join("current").display().to_string()
    );
    let manifest = cache.join("current/workbench/nexus-build/manifest.json");
    assert_eq!(util::read(&manifest), r#"{"from":"workbench.loc"}"#);
    assert_eq!(util::read(&calls), "workbench.loc\n");
    // The copy it compiled holds the program's sources.
    assert!(cache.join("current/workbench/workbench.py").is_file());

    // Unchanged sources: the cached build is used.
    let second = compile();
    assert_eq!(second.stdout, first.stdout);
    assert_eq!(util::read(&calls), "workbench.loc\n", "{second:?}");

    // A changed source is compiled again, into a new entry.
    dir.write("src/workbench/workbench.py", "# changed\n");
    compile();
    assert_eq!(util::read(&calls), "workbench.loc\nworkbench.loc\n");
    let entries = std::fs::read_dir(&cache)
        .expect("list the cache")
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("workbench-"))
        .count();
    assert_eq!(entries, 2);
}

#[test]
fn compile_sh_fails_with_the_compilers_message_and_caches_nothing() {
    let dir = TempDir::new();
    let bin = tool_dir(&dir);
    fake_morloc(&dir, true);
    let source = script("programs/workbench");
    let cache = dir.join("cache");
    let out = sh(&script("compile.sh"), &[&cache, &source], &[("PATH", &bin)]);
    assert_eq!(out.code, Some(1), "{out:?}");
    assert!(
        out.stderr
            .contains("morloc make -o nexus workbench.loc failed")
            && out.stderr.contains("workbench.loc:3: parse error"),
        "{out:?}"
    );
    let left: Vec<String> = std::fs::read_dir(&cache)
        .expect("list the cache")
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|name| name != "current")
        .collect();
    assert!(left.is_empty(), "left in the cache: {left:?}");
}

/// Runs `code` with `tests/real` on Python's path; it prints "ok" at its
/// end, after its asserts.
fn python_in_real(code: &str) -> Output {
    util::output(
        Command::new("python3")
            .current_dir(script(""))
            .args(["-c", code]),
    )
}

/// The comparison with `morloc-nexus` fails on any difference but those
/// docs/differences.md documents, and names the documented ones by kind.
#[test]
fn the_differential_judge_passes_documented_differences_only() {
    let out = python_in_real(
        r#"
import differential as d
differential_ok = d.check_documented()
def call(result): return {"jsonrpc": "2.0", "id": 1, "result": result}
def text(t, err=False): return call({"content": [{"type": "text", "text": t}], "isError": err})
assert d.judge(text("42"), {**text("42"), "id": 9}, "same") is None
assert d.judge(text("0.1"), text("0.100000000000000"), "floats") == "floats"
assert d.judge(text("argument '_1': expected an integer", True), text("bad input", True), "w") == "error wording"
hint = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "unknown tool 'x' (did you mean 'y'?)"}}
bare = {"jsonrpc": "2.0", "id": 1, "error": {"code": -32602, "message": "unknown tool 'x'"}}
assert d.judge(hint, bare, "hint") == "hints"
for ours, ref in [(text("42"), text("43")), (text("42", True), text("42")), (hint, text("1")),
                  (call({"content": [{"type": "text", "text": "1"}], "isError": False, "extra": 1}), text("1"))]:
    try:
        d.judge(ours, ref, "undocumented")
    except d.Mismatch as e:
        assert "undocumented" in str(e), e
    else:
        raise AssertionError("passed: %r %r" % (ours, ref))
print("ok")
"#,
    );
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout.trim_end(), "ok", "{out:?}");
}

/// MORLOC_REAL_PROGRAMS may name a manifest, a program's directory as
/// `morloc make` leaves it, its build directory, or a directory of
/// programs; each program is named after its directory.
#[test]
fn morloc_real_programs_entries_name_programs_in_every_layout() {
    let dir = TempDir::new();
    for program in ["many/a", "many/b", "one"] {
        dir.write(&format!("{program}/nexus-build/manifest.json"), "{}");
    }
    dir.write("many/not-a-program/notes.txt", "");
    dir.write("bare-build/manifest.json", "{}");
    let code = format!(
        r#"
import differential as d, os
root = {root:?}
def names(entry): return [(n, os.path.relpath(p, root)) for n, p in d.programs_at(os.path.join(root, entry))]
assert names("many") == [("a", "many/a/nexus-build/manifest.json"), ("b", "many/b/nexus-build/manifest.json")], names("many")
assert names("one") == [("one", "one/nexus-build/manifest.json")], names("one")
assert names("one/nexus-build") == [("one", "one/nexus-build/manifest.json")]
assert names("one/nexus-build/manifest.json") == [("one", "one/nexus-build/manifest.json")]
assert names("bare-build") == [("bare-build", "bare-build/manifest.json")]
assert names("many/not-a-program") == [] and names("nowhere") == []
print("ok")
"#,
        root = dir.path().display().to_string()
    );
    let out = python_in_real(&code);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert_eq!(out.stdout.trim_end(), "ok", "{out:?}");
}
