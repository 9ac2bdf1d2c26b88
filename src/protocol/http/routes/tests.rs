//! Unit tests of the route table and the checks before a handler.

use super::*;
use crate::protocol::http::Fields;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum H {
    Mcp,
    Health,
    Metrics,
}

const TABLE: &[Route<H>] = &[
    Route {
        path: "/mcp",
        methods: &["POST", "DELETE"],
        guarded: true,
        handler: H::Mcp,
    },
    Route {
        path: "/health",
        methods: &["GET", "HEAD"],
        guarded: false,
        handler: H::Health,
    },
    Route {
        path: "/metrics",
        methods: &["GET"],
        guarded: true,
        handler: H::Metrics,
    },
];

fn request(method: &str, path: &str, headers: &[(&str, &str)]) -> Request {
    let mut headers: Fields = headers.iter().copied().collect();
    if headers.get("host").is_none() {
        headers.push("host", "127.0.0.1:8000");
    }
    Request {
        method: method.into(),
        target: path.into(),
        path: path.into(),
        minor_version: 1,
        headers,
        keep_alive: true,
        ..Request::default()
    }
}

fn judge(token: Option<&str>, req: &Request) -> Result<(H, Headers), Answer> {
    let policy = OriginPolicy::new("127.0.0.1", ["https://app.example.com"]);
    let gate = Gate {
        policy: &policy,
        token,
    };
    admit(TABLE, &gate, req).map(|(route, cors)| (route.handler, cors))
}

fn header<'a>(answer: &'a Answer, name: &str) -> Option<&'a str> {
    answer
        .headers
        .iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.as_str())
}

#[test]
fn each_path_and_method_reaches_its_handler() {
    let cases = [
        ("POST", "/mcp", H::Mcp),
        ("DELETE", "/mcp", H::Mcp),
        ("GET", "/health", H::Health),
        ("HEAD", "/health", H::Health),
        ("GET", "/metrics", H::Metrics),
    ];
    for (method, path, handler) in cases {
        let got = judge(None, &request(method, path, &[])).map(|(h, _)| h);
        assert_eq!(got, Ok(handler), "{method} {path}");
    }
}

#[test]
fn a_wrong_method_gets_405_with_the_routes_allow() {
    let cases = [
        ("GET", "/mcp", "POST, DELETE, OPTIONS"),
        ("PUT", "/mcp", "POST, DELETE, OPTIONS"),
        ("POST", "/health", "GET, HEAD"),
        ("OPTIONS", "/health", "GET, HEAD"),
        ("POST", "/metrics", "GET, OPTIONS"),
    ];
    for (method, path, allow) in cases {
        let answer = judge(None, &request(method, path, &[])).unwrap_err();
        assert_eq!(answer.status, 405, "{method} {path}");
        assert_eq!(header(&answer, "Allow"), Some(allow), "{method} {path}");
        assert_eq!(answer.body, json_error("method not allowed"));
        assert!(answer.keep_alive);
    }
}

#[test]
fn an_unknown_path_is_404_after_the_checks() {
    let answer = judge(None, &request("POST", "/nope", &[])).unwrap_err();
    assert_eq!((answer.status, answer.body), (404, json_error("not found")));
    // Paths are matched exactly: no prefix, no trailing slash, no case folding.
    for path in ["/mcp/", "/MCP", "/mcpx", "/", "/health/x"] {
        let answer = judge(None, &request("POST", path, &[])).unwrap_err();
        assert_eq!(answer.status, 404, "{path}");
    }
    // Without the token an unknown path is 401, like a known guarded one.
    let answer = judge(Some("s3cret"), &request("POST", "/nope", &[])).unwrap_err();
    assert_eq!(answer.status, 401);
    assert!(header(&answer, "WWW-Authenticate").is_some());
}

#[test]
fn the_checks_run_in_order_on_guarded_routes_only() {
    let evil_host = [("host", "evil.example")];
    let evil_origin = [("origin", "https://evil.example")];
    // Host first: even before the token and the path.
    let answer = judge(Some("s3cret"), &request("POST", "/nope", &evil_host)).unwrap_err();
    assert_eq!((answer.status, answer.keep_alive), (403, false));
    let absolute = Request {
        target: "http://evil.example/mcp".into(),
        ..request("POST", "/mcp", &[])
    };
    assert_eq!(judge(None, &absolute).unwrap_err().status, 403);
    // Then Origin (the connection stays open).
    let answer = judge(None, &request("POST", "/mcp", &evil_origin)).unwrap_err();
    assert_eq!((answer.status, answer.keep_alive), (403, true));
    // Then the token.
    let answer = judge(Some("s3cret"), &request("POST", "/mcp", &[])).unwrap_err();
    assert_eq!(answer.status, 401);
    let authorized = [("authorization", "Bearer s3cret")];
    assert!(judge(Some("s3cret"), &request("POST", "/mcp", &authorized)).is_ok());
    // An open route is answered to anyone.
    for headers in [&evil_host[..], &evil_origin[..], &[]] {
        let got = judge(Some("s3cret"), &request("GET", "/health", headers));
        assert_eq!(got, Ok((H::Health, Vec::new())), "{headers:?}");
    }
}

#[test]
fn an_allowed_origin_gets_cors_headers_and_its_preflight() {
    let origin = [("origin", "https://app.example.com")];
    let (_, cors) = judge(None, &request("POST", "/mcp", &origin)).unwrap();
    assert!(cors
        .iter()
        .any(|(k, v)| k == "Access-Control-Allow-Origin" && v == "https://app.example.com"));
    // The preflight comes before the token: browsers send it without one.
    let answer = judge(Some("s3cret"), &request("OPTIONS", "/mcp", &origin)).unwrap_err();
    assert_eq!(answer.status, 204);
    assert!(answer.body.is_empty());
    assert!(header(&answer, "Access-Control-Allow-Methods").is_some());
    // Without an Origin a preflight lists the route's methods.
    let answer = judge(None, &request("OPTIONS", "/metrics", &[])).unwrap_err();
    assert_eq!(
        (answer.status, header(&answer, "Allow")),
        (204, Some("GET, OPTIONS"))
    );
    let answer = judge(None, &request("OPTIONS", "/nope", &[])).unwrap_err();
    assert_eq!(header(&answer, "Allow"), Some(CORS_ALLOW_METHODS));
    // A 405 on a guarded route keeps the CORS headers.
    let answer = judge(None, &request("GET", "/mcp", &origin)).unwrap_err();
    assert!(header(&answer, "Access-Control-Allow-Origin").is_some());
}
