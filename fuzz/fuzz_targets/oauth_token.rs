//! OAuth access tokens: splitting and decoding arbitrary text as a compact
//! JWS never panics, what is signed is the token's first two parts as sent,
//! and validating it against a fixed key set never panics and never accepts
//! a token (no input can carry a signature of these keys).
#![no_main]

use libfuzzer_sys::fuzz_target;
use morloc_mcp::protocol::oauth::{self, jwt, Config, Jwks, Verdict};

/// A 2048-bit RSA modulus of a key nobody holds, and a P-256 point.
const KEYS: &str = concat!(
    r#"{"keys":[{"kty":"RSA","kid":"r","e":"AQAB","n":""#,
    "xMNt7VAm4JXrMLAmEBGeDjJyPfMUWK0iWNzOTvmCOXd4CKIWCfK0eJVgrHZB3XNMv0dBZ6Ym8dnvMXPrvBmfgTEgBETVkYPV9uBLrHkp8C3EMK7DBpbaDSGHOJfEkTMRWYcyD0p2ibXTMHIM7N9jiGFz6YOYsCgFCz7MUaTbbvHWRHDavUlNmCvFqF7Jo3iBNb2LwhuQnCCcPl4TEBfuatfbVxqqHcJlEQVMgTzhgSu2SN58oq8HTXGiVMkYwSWBdDuSHdmZH3a6hwXSy54XadpR3Y7wFKBmbPHuG6g7Dsxf8MYY5fFBQkMyIKN6DyAozDJIpQ4Uvo5tPrTftqiQNQ",
    r#""},{"kty":"EC","crv":"P-256","kid":"e","x":"MKBCTNIcKUSDii11ySs3526iDZ8AiTo7Tu6KPAqv7D4","y":"4Etl6SRW2YiLUrN5vfvVHuhp7x8PxltmWWlbbM4IFyM"}]}"#
);

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(jws) = jwt::parse(text) {
        assert!(text.as_bytes().starts_with(jws.signing_input));
        assert_eq!(text.as_bytes().get(jws.signing_input.len()), Some(&b'.'));
    }
    let keys = Jwks::parse(KEYS.as_bytes()).expect("the fixed key set parses");
    let config = Config {
        issuer: "https://issuer.example".into(),
        audience: "https://mcp.example/mcp".into(),
        resource: "https://mcp.example/mcp".into(),
        scopes: vec!["mcp".into()],
        tool_scopes: Vec::new(),
    };
    let header = format!("Bearer {text}");
    for held in [None, Some(&keys)] {
        let verdict = oauth::validate(&config, held, Some(&header), 1_800_000_000);
        assert!(!matches!(verdict, Verdict::Accepted(_)), "{verdict:?}");
        if let Verdict::Refused(refusal) = verdict {
            let (status, challenge) = oauth::challenge(&config, &refusal);
            assert!(status == 401 || status == 403);
            assert!(!challenge.contains('\n'));
        }
    }
});
