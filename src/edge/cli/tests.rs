//! Unit tests of the `cli` module (kept apart from the code they test).

use std::time::Duration;

use super::*;

fn parse(argv0: &str, line: &str) -> Result<RawArgs, CliError> {
    parse_args(
        Some(OsStr::new(argv0)),
        line.split_whitespace().map(OsString::from),
    )
}

#[track_caller]
fn check(line: &str, expected: RawArgs) {
    assert_eq!(parse("morloc-mcp", line), Ok(expected), "{line}");
}

#[track_caller]
fn check_usage(argv0: &str, line: &str, message: &str) {
    assert_eq!(
        parse(argv0, line),
        Err(CliError::Usage(message.to_string())),
        "{argv0} {line}"
    );
}

fn serve(targets: &[&str]) -> RawServe {
    RawServe {
        targets: targets.iter().map(PathBuf::from).collect(),
        ..RawServe::default()
    }
}

/// `serve(targets)` with `settings`.
fn with(targets: &[&str], settings: Settings) -> RawArgs {
    RawArgs::Serve(RawServe {
        settings,
        ..serve(targets)
    })
}

#[test]
fn subcommands() {
    check("--help", RawArgs::Help(TOP_HELP.into()));
    check("-h", RawArgs::Help(TOP_HELP.into()));
    check("help", RawArgs::Help(TOP_HELP.into()));
    check("help mcp", RawArgs::Help(mcp_help()));
    check("help router", RawArgs::Help(router_help()));
    check("help tools", RawArgs::Help(TOOLS_HELP.into()));
    check("help config", RawArgs::Help(config_help()));
    check("-V", RawArgs::Version);
    check("--version", RawArgs::Version);
    check(
        "tools p.json",
        RawArgs::Tools {
            target: "p.json".into(),
            tools_file: None,
        },
    );
    check("tools --help", RawArgs::Help(TOOLS_HELP.into()));
    check("tools p.json -h", RawArgs::Help(TOOLS_HELP.into()));
    check(
        "config dir",
        RawArgs::Config {
            target: "dir".into(),
            options: vec![("max-result-chars".into(), AGENT_RESULT_CHARS.to_string())],
        },
    );
    check("config -h", RawArgs::Help(config_help()));
    check("mcp p", RawArgs::Serve(serve(&["p"])));
    check("mcp -h", RawArgs::Help(mcp_help()));
    check("router --help", RawArgs::Help(router_help()));
    // Help wins even after bad values would have been seen later.
    check("mcp --help --http-port 99999", RawArgs::Help(mcp_help()));
}

#[test]
fn serve_options() {
    check(
        "mcp p --http-port 8080 --http-host ::1 --auth-token s3cret --allow-no-auth --call-timeout 2.5 \
         --plain-tool-names --allow-origin http://a --allow-origin=http://b --lazy-pools --session-ttl 1",
        with(
            &["p"],
            Settings {
                http_port: Some(8080),
                http_host: "::1".into(),
                auth_token: Some("s3cret".into()),
                allow_no_auth: true,
                allow_origins: vec!["http://a".into(), "http://b".into()],
                call_timeout: Some(Duration::from_millis(2500)),
                session_ttl: Duration::from_secs(1),
                plain_tool_names: true,
                lazy_pools: true,
                ..Settings::default()
            },
        ),
    );
    for port in [0, 65535] {
        check(
            &format!("mcp --http-port={port} p"),
            with(
                &["p"],
                Settings {
                    http_port: Some(port),
                    ..Settings::default()
                },
            ),
        );
    }
    check(
        "mcp p --task-after 0 --task-ttl 0.5 --job-tools --request-timeout 2 --idle-timeout 0.5",
        with(
            &["p"],
            Settings {
                task_after: Duration::ZERO,
                task_ttl: Duration::from_millis(500),
                job_tools: true,
                request_timeout: Duration::from_secs(2),
                idle_timeout: Duration::from_millis(500),
                ..Settings::default()
            },
        ),
    );
    check(
        "mcp p --call-timeout 0 --max-result-chars 0",
        with(
            &["p"],
            Settings {
                call_timeout: None,
                max_result_chars: None,
                ..Settings::default()
            },
        ),
    );
    check(
        "router a b --http-port 1",
        RawArgs::Serve(RawServe {
            router: true,
            settings: Settings {
                http_port: Some(1),
                ..Settings::default()
            },
            ..serve(&["a", "b"])
        }),
    );
}

#[test]
fn usage_errors() {
    check_usage(
        "morloc-mcp",
        "",
        "missing command (mcp, router, tools or config); see 'morloc-mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "serve p",
        "unknown command 'serve' (expected mcp, router, tools or config); see 'morloc-mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "--bogus",
        "invalid option '--bogus'; see 'morloc-mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "mcp",
        "missing <program>; see 'morloc-mcp mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "mcp a b",
        r#"unexpected argument "b" for 'mcp'; see 'morloc-mcp mcp --help'"#,
    );
    check_usage(
        "morloc-mcp",
        "mcp p --stdio",
        "invalid option '--stdio' for 'mcp'; see 'morloc-mcp mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --http-port",
        "missing argument for option '--http-port' for 'mcp'; see 'morloc-mcp mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --http-port 65536",
        "invalid value '65536' for '--http-port': expected a port number 0..65535",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --http-port -1",
        "invalid value '-1' for '--http-port': expected a port number 0..65535",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --http-port=",
        "empty value for '--http-port': expected a port number 0..65535",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --max-buffered 12x",
        "invalid value '12x' for '--max-buffered': expected a number of bytes, optionally with k, m or g (KiB, MiB, GiB)",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --max-buffered 0k",
        "invalid value '0k' for '--max-buffered': 0 would refuse every request body",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --max-sessions-per-owner 0",
        "invalid value '0' for '--max-sessions-per-owner': expected a whole number of at least 1",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --auth-token=",
        "empty value for '--auth-token': no request could match it",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --http-host=",
        "empty value for '--http-host': an IP address or 'localhost'",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --allow-origin=",
        "empty value for '--allow-origin': an Origin such as https://app.example",
    );
    for bad in ["-1", "x", "NaN", "inf", "1e400"] {
        check_usage(
            "morloc-mcp",
            &format!("mcp p --call-timeout={bad}"),
            &format!("invalid value '{bad}' for '--call-timeout': expected a number of seconds (0 or more)"),
        );
    }
    check_usage(
        "morloc-mcp",
        "mcp p --allow-no-auth=yes",
        r#"unexpected argument for option '--allow-no-auth': "yes" for 'mcp'; see 'morloc-mcp mcp --help'"#,
    );
    check_usage(
        "morloc-mcp",
        "router a",
        "'router' serves HTTP only: --http-port is required",
    );
    check_usage(
        "morloc-mcp",
        "router --http-port 1",
        "missing at least one <program>; see 'morloc-mcp router --help'",
    );
    check_usage(
        "morloc-mcp",
        "tools",
        "missing <program>; see 'morloc-mcp tools --help'",
    );
    check_usage(
        "morloc-mcp",
        "tools a b",
        r#"unexpected argument "b" for 'tools'; see 'morloc-mcp tools --help'"#,
    );
    check_usage(
        "morloc-mcp",
        "mcp p --call-timeout=",
        "empty value for '--call-timeout': expected a number of seconds (0 or more)",
    );
    for (zero, flag) in [("0", "request-timeout"), ("0.0", "idle-timeout")] {
        check_usage(
            "morloc-mcp",
            &format!("mcp p --{flag} {zero}"),
            &format!("invalid value '{zero}' for '--{flag}': expected a number of seconds above 0"),
        );
    }
}

#[test]
fn nexus_spellings() {
    let nexus = |line: &str| parse("/usr/local/bin/morloc-nexus", line);
    assert_eq!(
        nexus("mcp prog --http-port 9"),
        Ok(with(
            &["prog"],
            Settings {
                http_port: Some(9),
                ..Settings::default()
            }
        ))
    );
    assert_eq!(nexus("mcp -h"), Ok(RawArgs::Help(mcp_help())));
    assert_eq!(nexus("--help"), Ok(RawArgs::Help(NEXUS_HELP.into())));
    assert_eq!(
        nexus("run prog --mcp-tools"),
        Ok(RawArgs::Tools {
            target: "prog".into(),
            tools_file: None,
        })
    );
    assert_eq!(
        nexus("run --mcp-tools prog"),
        Ok(RawArgs::Tools {
            target: "prog".into(),
            tools_file: None,
        })
    );
    assert_eq!(
        nexus("run prog --mcp-config"),
        Ok(RawArgs::Config {
            target: "prog".into(),
            options: Vec::new(),
        })
    );
    assert_eq!(
        nexus("run --mcp-config prog --mcp-tools"),
        Ok(RawArgs::Tools {
            target: "prog".into(),
            tools_file: None,
        })
    );
    assert_eq!(
        nexus("run prog --mcp-config extra words"),
        Ok(RawArgs::Config {
            target: "prog".into(),
            options: Vec::new(),
        })
    );
    // Under any other name the nexus spellings mean nothing.
    check_usage(
        "morloc-mcp",
        "run prog --mcp-tools",
        "unknown command 'run' (expected mcp, router, tools or config); see 'morloc-mcp --help'",
    );
    let only = NEXUS_ONLY_MCP;
    check_usage(
        "morloc-nexus",
        "",
        &format!("{only}; see 'morloc-nexus --help'"),
    );
    check_usage(
        "morloc-nexus",
        "daemon prog",
        &format!("'daemon' is not provided: {only}"),
    );
    check_usage(
        "morloc-nexus",
        "router --http-port 1",
        &format!("'router' is not provided: {only}"),
    );
    check_usage(
        "morloc-nexus",
        "run prog addOne 1",
        &format!("running commands is not provided: {only}"),
    );
    check_usage(
        "morloc-nexus",
        "run prog",
        &format!("running commands is not provided: {only}"),
    );
    // Only the first word after the target counts.
    check_usage(
        "morloc-nexus",
        "run prog cmd --mcp-tools",
        &format!("running commands is not provided: {only}"),
    );
    check_usage(
        "morloc-nexus",
        "run --mcp-tools",
        "--json-help/--mcp-tools/--mcp-config require a program target",
    );
    check_usage(
        "morloc-nexus",
        "run --mcp-tools -x",
        "--json-help/--mcp-tools/--mcp-config require a program target",
    );
    check_usage(
        "morloc-nexus",
        "run prog --json-help",
        &format!("--json-help is not provided: {only}"),
    );
    check_usage(
        "morloc-nexus",
        "run --mcp-tools prog --json-help",
        &format!("--json-help is not provided: {only}"),
    );
}

#[test]
fn launcher_detection() {
    let check = |text: &str| launcher_manifest(text.as_bytes());
    let launcher = "#!/bin/sh\nexport MORLOC_PROG_NAME=\"$0\"\nexec morloc-nexus run '/abs/prog-build/manifest.json' \"$@\"\n";
    assert_eq!(
        check(launcher),
        Some(Some("/abs/prog-build/manifest.json".into()))
    );
    // `'\''` is an escaped quote; the path runs to the last quote.
    assert_eq!(
        check("#!/bin/sh\n  morloc-nexus run '/a/it'\\''s/manifest.json' \"$@\"\n"),
        Some(Some("/a/it's/manifest.json".into()))
    );
    assert_eq!(
        check("#!/bin/sh\nexec morloc-nexus run /no/quotes\n"),
        Some(None)
    );
    assert_eq!(
        check("#!/bin/sh\nexec morloc-nexus run 'unbalanced\n"),
        Some(None)
    );
    assert_eq!(
        check("#!/bin/sh\n# uses morloc-nexus\necho hi\n"),
        Some(None)
    );
    // The first matching line wins even without quotes.
    assert_eq!(
        check("#!/bin/sh\nmorloc-nexus x\nexec morloc-nexus run '/b'\n"),
        Some(None)
    );
    assert_eq!(check("{\"name\":\"morloc-nexus\"}"), None);
    assert_eq!(check("#!/bin/sh\nexec python3 x\n"), None);
    assert_eq!(launcher_manifest(b"#!\xff morloc-nexus"), None);
    // A prefix cut inside a multi-byte character is still read.
    let mut cut = launcher.as_bytes().to_vec();
    cut.extend_from_slice("é".as_bytes().get(..1).unwrap_or_default());
    assert_eq!(
        launcher_manifest(&cut),
        Some(Some("/abs/prog-build/manifest.json".into()))
    );
}

#[test]
fn prepare_fills_defaults_and_the_env_token() {
    let dir = std::env::temp_dir().join(format!("morloc-mcp-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let manifest = dir.join("manifest.json");
    std::fs::write(
        &manifest,
        r#"{"name":"m","build":{"path":".","time":1,"morloc_version":"0.98.2"}}"#,
    )
    .unwrap();
    let target = manifest.to_string_lossy().into_owned();
    let run = |line: &str, token: Option<&str>| {
        let raw = parse("morloc-mcp", &line.replace("TARGET", &target)).unwrap();
        let env = Env {
            auth_token: token.map(OsString::from),
            current_exe: None,
        };
        match prepare(raw, &env, &mut Vec::new()) {
            Ok(Action::Serve(config)) => config,
            other => panic!("{line}: {other:?}"),
        }
    };
    let stdio = run("mcp TARGET", Some("t"));
    assert!(stdio.http.is_none());
    assert_eq!(stdio.settings, Settings::default());
    assert_eq!(stdio.programs[0].loaded.manifest.name, "m");
    let http = run(
        "mcp TARGET --http-port 0 --call-timeout 0",
        Some("from-env"),
    );
    assert_eq!(http.settings.call_timeout, None);
    assert_eq!(
        http.http,
        Some(HttpConfig {
            port: 0,
            auth_token: Some("from-env".into()),
            oauth: None,
        })
    );
    let limits = run(
        "mcp TARGET --http-port 1 --max-buffered 64k --max-conns-per-peer 0 --max-sessions-per-owner 5",
        None,
    )
    .settings;
    assert_eq!(
        (
            limits.max_buffered,
            limits.max_conns_per_peer,
            limits.max_sessions_per_owner
        ),
        (64 * 1024, 0, 5)
    );
    let explicit = run(
        "mcp TARGET --http-port 1 --auth-token mine",
        Some("from-env"),
    );
    assert_eq!(
        explicit.http.and_then(|h| h.auth_token),
        Some("mine".into())
    );
    let empty_env = run("mcp TARGET --http-port 1", Some(""));
    assert_eq!(empty_env.http.and_then(|h| h.auth_token), None);
    let router = run("router TARGET TARGET --http-port 1", None);
    assert!(router.router);
    assert_eq!(router.programs.len(), 2);
    // A directory without a manifest.
    let empty = dir.join("empty");
    std::fs::create_dir_all(&empty).unwrap();
    let raw = RawArgs::Tools {
        target: empty.clone(),
        tools_file: None,
    };
    match prepare(raw, &Env::default(), &mut Vec::new()) {
        Err(CliError::Start(message)) => assert!(
            message.ends_with("is a directory without a manifest.json"),
            "{message}"
        ),
        other => panic!("{other:?}"),
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn instance_id_and_drain_timeout() {
    let words =
        |w: &[&str]| parse_args(Some(OsStr::new("morloc-mcp")), w.iter().map(OsString::from));
    let parsed = words(&["mcp", "p", "--instance-id", "a", "--drain-timeout", "2.5"]).unwrap();
    let RawArgs::Serve(raw) = parsed else {
        panic!("{parsed:?}")
    };
    let raw = raw.settings;
    assert_eq!(raw.instance_id.as_ref().map(|i| i.as_str()), Some("a"));
    assert_eq!(raw.drain_timeout, Duration::from_millis(2500));
    for (bad, why) in [
        ("a.b", "'.' is not allowed"),
        ("", "at least one character"),
        ("x y", "' ' is not allowed"),
    ] {
        let err = words(&["router", "p", "--http-port", "1", "--instance-id", bad]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        let text = err.to_string();
        assert!(
            text.starts_with(&if bad.is_empty() {
                "empty value for '--instance-id': ".to_string()
            } else {
                format!("invalid value '{bad}' for '--instance-id': ")
            }) && text.contains(why),
            "{text}"
        );
    }
    let err = words(&["mcp", "p", "--drain-timeout", "-1"]).unwrap_err();
    assert!(err.to_string().contains("'--drain-timeout'"), "{err}");
}

#[test]
fn pool_replicas_take_a_language_and_a_count() {
    check(
        "mcp p --pool-replicas py=4 --pool-replicas R=1 --pool-replicas c++=2 \
         --pool-replicas Python3=3 --replica-idle 0.5",
        with(
            &["p"],
            Settings {
                pool_replicas: vec![
                    ("py".into(), 4),
                    ("r".into(), 1),
                    ("cpp".into(), 2),
                    ("py".into(), 3),
                ],
                replica_idle: Duration::from_millis(500),
                ..Settings::default()
            },
        ),
    );
    let bad = |value: &str, why: &str| {
        check_usage(
            "morloc-mcp",
            &format!("mcp p --pool-replicas {value}"),
            &format!(
                "invalid value '{value}' for '--pool-replicas': {why} (expected <lang>=<n>, e.g. py=4)"
            ),
        )
    };
    bad("py", "no '='");
    bad("=2", "empty language");
    bad("py=x", "the count is not a whole number");
    bad("py=0", "the count must be at least 1");
}

#[test]
fn queue_bounds_take_seconds_and_counts() {
    check(
        "mcp p --queue-timeout 2.5 --max-queued-per-owner 3 --max-queued 0",
        with(
            &["p"],
            Settings {
                queue_timeout: Some(Duration::from_millis(2500)),
                max_queued_per_owner: 3,
                max_queued: 0,
                ..Settings::default()
            },
        ),
    );
    check_usage(
        "morloc-mcp",
        "mcp p --max-queued -1",
        "invalid value '-1' for '--max-queued': expected a whole number of at least 0",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --max-queued-per-owner many",
        "invalid value 'many' for '--max-queued-per-owner': expected a whole number of at least 0",
    );
    check_usage(
        "morloc-mcp",
        "mcp p --queue-timeout soon",
        "invalid value 'soon' for '--queue-timeout': expected a number of seconds (0 or more)",
    );
}

#[test]
fn a_misspelt_option_gets_the_nearest_one() {
    check_usage(
        "morloc-mcp",
        "mcp p --http-prot 8080",
        "invalid option '--http-prot' for 'mcp' (did you mean '--http-port'?); see 'morloc-mcp mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "router p --calltimeout 3",
        "invalid option '--calltimeout' for 'router' (did you mean '--call-timeout'?); see 'morloc-mcp router --help'",
    );
    check_usage(
        "morloc-mcp",
        "config p --lazy-pool",
        "invalid option '--lazy-pool' for 'config' (did you mean '--lazy-pools'?); see 'morloc-mcp config --help'",
    );
    // Options for tests are never suggested.
    check_usage(
        "morloc-mcp",
        "mcp p --replica-idel 1",
        "invalid option '--replica-idel' for 'mcp'; see 'morloc-mcp mcp --help'",
    );
    // The options of `tools`, the top level's, and the commands too.
    check_usage(
        "morloc-mcp",
        "tools p --tools-fil t.json",
        "invalid option '--tools-fil' for 'tools' (did you mean '--tools-file'?); see 'morloc-mcp tools --help'",
    );
    check_usage(
        "morloc-mcp",
        "tools p --templat",
        "invalid option '--templat' for 'tools' (did you mean '--template'?); see 'morloc-mcp tools --help'",
    );
    check_usage(
        "morloc-mcp",
        "tools p --http-port 1",
        "invalid option '--http-port' for 'tools'; see 'morloc-mcp tools --help'",
    );
    check_usage(
        "morloc-mcp",
        "--verison",
        "invalid option '--verison' (did you mean '--version'?); see 'morloc-mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "help mpc",
        "no help for 'mpc' (did you mean 'mcp'?); see 'morloc-mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "mpc p",
        "unknown command 'mpc' (did you mean 'mcp'?); see 'morloc-mcp --help'",
    );
    check_usage(
        "morloc-mcp",
        "rooter p --http-port 1",
        "unknown command 'rooter' (did you mean 'router'?); see 'morloc-mcp --help'",
    );
}

#[test]
fn config_passes_serving_options_on() {
    let options = |line: &str| match parse("morloc-mcp", line) {
        Ok(RawArgs::Config { options, .. }) => options,
        other => panic!("{line}: {other:?}"),
    };
    let pair = |n: &str, v: &str| (n.to_string(), v.to_string());
    assert_eq!(
        options("config p --lazy-pools --call-timeout 30 --max-result-chars 0"),
        [
            pair("lazy-pools", ""),
            pair("call-timeout", "30"),
            pair("max-result-chars", "0")
        ]
    );
    // A relative path becomes absolute: the client starts the server
    // elsewhere.
    let here = std::env::current_dir().unwrap();
    assert_eq!(
        options("config p --tools-file t.json --pool-replicas c++=2"),
        [
            pair("tools-file", &here.join("t.json").to_string_lossy()),
            pair("pool-replicas", "c++=2"),
            pair("max-result-chars", "80000"),
        ]
    );
    // Checked as `mcp` checks them over stdio.
    check_usage(
        "morloc-mcp",
        "config p --call-timeout soon",
        "invalid value 'soon' for '--call-timeout': expected a number of seconds (0 or more)",
    );
    for line in [
        "config p --http-port 1",
        "config p --metrics-token m",
        "config p --public-url https://h/mcp",
    ] {
        match parse("morloc-mcp", line) {
            Err(CliError::Usage(m)) => assert!(m.contains("--http-port"), "{line}: {m}"),
            other => panic!("{line}: {other:?}"),
        }
    }
    let manifest =
        std::env::temp_dir().join(format!("morloc-mcp-config-{}.json", std::process::id()));
    std::fs::write(
        &manifest,
        r#"{"name":"m","build":{"path":".","time":1,"morloc_version":"0.98.2"}}"#,
    )
    .unwrap();
    let line = format!(
        "config {} --lazy-pools --task-after 5000",
        manifest.display()
    );
    let env = Env {
        auth_token: None,
        current_exe: Some("/bin/morloc-mcp".into()),
    };
    let printed = match prepare(parse("morloc-mcp", &line).unwrap(), &env, &mut Vec::new()) {
        Ok(Action::Print { stdout, .. }) => stdout,
        other => panic!("{other:?}"),
    };
    let _ = std::fs::remove_file(&manifest);
    let entry: Value = serde_json::from_str(&printed).unwrap();
    let args = &entry["mcpServers"]["m"]["args"];
    assert_eq!(
        args,
        &serde_json::json!([
            "mcp",
            std::fs::canonicalize(std::env::temp_dir())
                .unwrap()
                .join(manifest.file_name().unwrap())
                .to_string_lossy(),
            "--lazy-pools",
            "--task-after",
            "5000",
            "--max-result-chars",
            "80000"
        ])
    );
}

/// `--pool-replicas`' help names the known pool languages and which scale
/// up by default, as `format::lang` has them: a language added there is
/// named here too.
#[test]
fn the_pool_replicas_help_names_the_languages_of_the_table() {
    let flag = settings::FLAGS.iter().find(|f| f.name == "pool-replicas");
    let flag = flag.expect("the flag");
    let words = |text: &str| -> Vec<String> {
        let words = text.split(|c: char| !c.is_ascii_alphanumeric() && c != '+');
        words
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let help = words(&flag.help.join(" "));
    let settings::Shown::Said(shown) = flag.default else {
        panic!("the default is said in words")
    };
    let shown = words(shown);
    for lang in crate::format::lang::LANGUAGES {
        assert!(help.contains(&lang.name.to_string()), "{}", lang.name);
        let scaled = shown.contains(&lang.name.to_string());
        assert_eq!(scaled, lang.replicated, "{}: {shown:?}", lang.name);
    }
}
