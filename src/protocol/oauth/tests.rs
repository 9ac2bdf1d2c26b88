//! Tokens minted here with the committed test keys (`tests/data/oauth`),
//! checked against every rule of `validate`.

use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Value as Json};

use super::jwt::base64url;
use super::*;

const RSA1: &[u8] = include_bytes!("../../../tests/data/oauth/rsa1.pk8");
const ROGUE: &[u8] = include_bytes!("../../../tests/data/oauth/rogue.pk8");
const EC1: &[u8] = include_bytes!("../../../tests/data/oauth/ec1.pk8");

const NOW: u64 = 1_800_000_000;
const ISS: &str = "http://127.0.0.1:9/issuer";
const AUD: &str = "https://mcp.example.test/mcp";

fn b64(bytes: &[u8]) -> String {
    const ABC: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let mut acc = 0u32;
        for (i, b) in chunk.iter().enumerate() {
            acc |= u32::from(*b) << (16 - 8 * i);
        }
        for i in 0..=chunk.len() {
            out.push(ABC[(acc >> (18 - 6 * i) & 63) as usize] as char);
        }
    }
    out
}

fn rsa_jwk(der: &[u8], kid: &str) -> Json {
    let pair = RsaKeyPair::from_pkcs8(der).unwrap();
    let c = signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
    json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64(&c.n), "e": b64(&c.e)})
}

fn ec_jwk(der: &[u8], kid: &str) -> Json {
    let rng = SystemRandom::new();
    let pair =
        EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng).unwrap();
    let point = pair.public_key().as_ref();
    json!({"kty": "EC", "crv": "P-256", "kid": kid, "x": b64(&point[1..33]), "y": b64(&point[33..])})
}

fn keys() -> Jwks {
    let doc =
        json!({"keys": [rsa_jwk(RSA1, "rsa-1"), ec_jwk(EC1, "ec-1"), {"kty": "oct", "k": "AAAA"}]});
    Jwks::parse(doc.to_string().as_bytes()).unwrap()
}

fn mint(header: Json, claims: &Json, der: &[u8]) -> String {
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let rng = SystemRandom::new();
    let sig = match header["alg"].as_str() {
        Some("ES256") => {
            let pair =
                EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, der, &rng)
                    .unwrap();
            pair.sign(&rng, input.as_bytes()).unwrap().as_ref().to_vec()
        }
        _ => {
            let pair = RsaKeyPair::from_pkcs8(der).unwrap();
            let mut sig = vec![0; pair.public().modulus_len()];
            pair.sign(
                &signature::RSA_PKCS1_SHA256,
                &rng,
                input.as_bytes(),
                &mut sig,
            )
            .unwrap();
            sig
        }
    };
    format!("{input}.{}", b64(&sig))
}

fn claims() -> Json {
    json!({"iss": ISS, "aud": AUD, "sub": "alice", "exp": NOW + 600, "nbf": NOW - 10, "scope": "mcp:tools extra"})
}

fn config() -> Config {
    Config {
        issuer: ISS.into(),
        audience: AUD.into(),
        resource: AUD.into(),
        scopes: vec!["mcp:tools".into()],
        tool_scopes: vec![(key("shout"), vec!["mcp:admin".into()])],
    }
}

fn check(token: &str) -> Verdict {
    validate(
        &config(),
        Some(&keys()),
        Some(&format!("Bearer {token}")),
        NOW,
    )
}

fn refused(token: &str) -> String {
    match check(token) {
        Verdict::Refused(Refusal::Invalid(why)) => why,
        other => panic!("expected invalid_token, got {other:?}"),
    }
}

fn rs(kid: &str) -> Json {
    json!({"alg": "RS256", "typ": "JWT", "kid": kid})
}

#[test]
fn base64url_round_trips_and_rejects_bad_text() {
    for len in 0..40 {
        let bytes: Vec<u8> = (0..len as u8).map(|b| b.wrapping_mul(37)).collect();
        assert_eq!(base64url(b64(&bytes).as_bytes()), Some(bytes));
    }
    assert_eq!(base64url(b"QQ=="), None, "padding");
    assert_eq!(base64url(b"QQ+/"), None, "standard alphabet");
    assert_eq!(base64url(b"Q"), None, "impossible length");
    assert_eq!(base64url(b"QR"), None, "non-zero trailing bits");
}

#[test]
fn a_valid_token_of_either_kind_is_accepted_with_its_subject_and_scopes() {
    for (header, der) in [
        (rs("rsa-1"), RSA1),
        (json!({"alg": "ES256", "kid": "ec-1"}), EC1),
    ] {
        let Verdict::Accepted(p) = check(&mint(header, &claims(), der)) else {
            panic!("refused");
        };
        assert_eq!(p.subject, "alice");
        assert_eq!(p.owner(), format!("oauth {ISS} alice"));
        assert_eq!(p.scopes, ["mcp:tools", "extra"]);
    }
    // An `aud` array holding the audience, and no kid with one key of the alg.
    let mut c = claims();
    c["aud"] = json!(["other", AUD]);
    assert!(matches!(
        check(&mint(json!({"alg": "ES256"}), &c, EC1)),
        Verdict::Accepted(_)
    ));
}

#[test]
fn audience_issuer_and_times_are_enforced() {
    let with = |key: &str, value: Json| {
        let mut c = claims();
        c[key] = value;
        refused(&mint(rs("rsa-1"), &c, RSA1))
    };
    assert!(with("aud", json!("https://other.example/mcp")).contains("aud"));
    assert!(with("aud", json!([])).contains("aud"));
    assert!(with("aud", json!("https://mcp.example.test/mcp/")).contains("aud"));
    assert!(with("iss", json!("http://evil")).contains("issuer"));
    assert!(with("exp", json!(NOW - SKEW)).contains("expired"));
    assert!(with("exp", json!("soon")).contains("exp"));
    assert!(with("nbf", json!(NOW + SKEW + 1)).contains("nbf"));
    assert!(with("sub", json!("")).contains("sub"));
    let mut c = claims();
    c.as_object_mut().unwrap().remove("aud");
    assert!(refused(&mint(rs("rsa-1"), &c, RSA1)).contains("aud"));
    // Within the skew both ways.
    let mut c = claims();
    c["exp"] = json!(NOW - SKEW + 1);
    c["nbf"] = json!(NOW + SKEW);
    assert!(matches!(
        check(&mint(rs("rsa-1"), &c, RSA1)),
        Verdict::Accepted(_)
    ));
}

#[test]
fn signatures_algorithms_and_keys_are_enforced() {
    // Signed by a key not in the set, under a kid that is.
    assert!(refused(&mint(rs("rsa-1"), &claims(), ROGUE)).contains("signature"));
    // An unknown kid asks for the set again.
    assert_eq!(
        check(&mint(rs("rogue"), &claims(), ROGUE)),
        Verdict::UnknownKey
    );
    assert_eq!(
        validate(&config(), None, Some("Bearer abcd.b.c"), NOW),
        Verdict::Refused(Refusal::Invalid("header is not JSON".into()))
    );
    // A tampered payload.
    let token = mint(rs("rsa-1"), &claims(), RSA1);
    let mut parts: Vec<&str> = token.split('.').collect();
    let mut c = claims();
    c["sub"] = json!("mallory");
    let forged = b64(c.to_string().as_bytes());
    parts[1] = &forged;
    assert!(refused(&parts.join(".")).contains("signature"));
    // alg none, HMAC, and an alg that does not match the key.
    let unsigned = format!(
        "{}.{}.",
        b64(br#"{"alg":"none","kid":"rsa-1"}"#),
        b64(claims().to_string().as_bytes())
    );
    assert!(refused(&unsigned).contains("alg none"));
    let hs = mint(json!({"alg": "HS256", "kid": "rsa-1"}), &claims(), RSA1);
    assert!(refused(&hs).contains("alg HS256"));
    let es_as_rsa = mint(json!({"alg": "ES256", "kid": "rsa-1"}), &claims(), EC1);
    assert!(refused(&es_as_rsa).contains("signature"));
    assert!(refused("a.b").contains("three"));
}

#[test]
fn missing_tokens_and_scopes_get_their_challenges() {
    let cfg = config();
    assert_eq!(
        validate(&cfg, None, None, NOW),
        Verdict::Refused(Refusal::Missing)
    );
    assert_eq!(
        validate(&cfg, None, Some("Basic x"), NOW),
        Verdict::Refused(Refusal::Missing)
    );
    let mut c = claims();
    c["scope"] = json!("extra");
    assert_eq!(
        check(&mint(rs("rsa-1"), &c, RSA1)),
        Verdict::Refused(Refusal::Insufficient(vec!["mcp:tools".into()]))
    );
    let meta = "https://mcp.example.test/.well-known/oauth-protected-resource/mcp";
    assert_eq!(metadata_url(AUD), meta);
    assert_eq!(
        challenge(&cfg, &Refusal::Missing),
        (
            401,
            format!("Bearer resource_metadata=\"{meta}\", scope=\"mcp:tools\"")
        )
    );
    let (status, value) = challenge(&cfg, &Refusal::Invalid("token \"expired\"".into()));
    assert_eq!(status, 401);
    assert!(
        value.starts_with("Bearer error=\"invalid_token\", error_description=\"token ?expired?\"")
    );
    let (status, value) = challenge(&cfg, &Refusal::Insufficient(vec!["a".into(), "b".into()]));
    assert_eq!(
        (status, value.as_str()),
        (
            403,
            format!(
                "Bearer error=\"insufficient_scope\", scope=\"a b\", resource_metadata=\"{meta}\""
            )
            .as_str()
        )
    );
    assert_eq!(cfg.tool_needs(&key("shout")), ["mcp:admin"]);
    assert!(cfg.tool_needs(&key("echo")).is_empty());
    let doc = metadata(&cfg, "demo");
    assert_eq!(doc["resource"], AUD);
    assert_eq!(doc["authorization_servers"], json!([ISS]));
    assert_eq!(doc["scopes_supported"], json!(["mcp:tools", "mcp:admin"]));
    assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
}

#[test]
fn key_sets_are_checked() {
    assert!(Jwks::parse(b"{}").unwrap_err().contains("keys"));
    assert!(Jwks::parse(b"[1]").is_err());
    assert!(Jwks::parse(br#"{"keys":[{"kty":"oct","k":"AA"}]}"#)
        .unwrap_err()
        .contains("no RSA"));
    assert!(
        Jwks::parse(br#"{"keys":[{"kty":"RSA","n":"AQAB","e":"AQAB"}]}"#)
            .unwrap_err()
            .contains("2048")
    );
    assert!(
        Jwks::parse(br#"{"keys":[{"kty":"EC","crv":"P-256","x":"AA","y":"AA"}]}"#)
            .unwrap_err()
            .contains("32")
    );
    assert!(Jwks::parse(br#"{"keys":[{"n":"AA"}]}"#)
        .unwrap_err()
        .contains("kty"));
    let set = keys();
    assert_eq!(set.keys.len(), 2);
    assert_eq!(
        set.find(Some("ec-1"), "ES256").map(|k| k.alg()),
        Some("ES256")
    );
    assert!(set.find(Some("nope"), "RS256").is_none());
}

#[test]
fn urls_and_responses_are_parsed() {
    let url = fetch::Url::parse("http://127.0.0.1:8080/jwks?x=1").unwrap();
    assert_eq!(url.addr.to_string(), "127.0.0.1:8080");
    assert_eq!(url.path, "/jwks?x=1");
    let url = fetch::Url::parse("http://[::1]/").unwrap();
    assert_eq!((url.addr.port(), url.host.as_str()), (80, "[::1]"));
    assert_eq!(fetch::Url::parse("http://localhost").unwrap().path, "/");
    assert!(fetch::Url::parse("https://issuer.example/jwks")
        .unwrap_err()
        .contains("TLS"));
    assert!(fetch::Url::parse("http://issuer.example/jwks")
        .unwrap_err()
        .contains("IP address"));
    let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}extra";
    assert_eq!(fetch::response(plain).unwrap(), (200, b"{}".to_vec()));
    let chunked =
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{\"\r\n1;x\r\n}\r\n0\r\n\r\n";
    assert_eq!(fetch::response(chunked).unwrap(), (200, b"{\"}".to_vec()));
    assert_eq!(
        fetch::response(b"HTTP/1.0 404 No\r\n\r\ngone").unwrap(),
        (404, b"gone".to_vec())
    );
    assert!(fetch::response(b"HTTP/1.1 200 OK\r\n").is_err());
    assert!(fetch::response(b"HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{}").is_err());
}

/// Issue 34, row 6: a server that answers with a `Content-Length` body
/// and keeps the connection open must not make the fetch wait for a close.
#[test]
fn a_response_is_whole_at_the_end_of_its_body() {
    let plain = b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}";
    let chunked = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n";
    assert!(fetch::complete(plain));
    assert!(fetch::complete(chunked));
    // Every shorter prefix waits for more.
    for whole in [&plain[..], &chunked[..]] {
        for cut in 0..whole.len() {
            assert!(!fetch::complete(&whole[..cut]), "{:?}", &whole[..cut]);
        }
    }
    // Without a length or chunks the body ends when the server closes.
    assert!(!fetch::complete(b"HTTP/1.1 200 OK\r\n\r\n{}"));
    assert!(!fetch::complete(
        b"HTTP/1.1 1000 OK\r\nContent-Length: 0\r\n\r\n"
    ));
}

/// The `oauth_jwks` fuzz target's finding (issue 34): a four-digit status
/// was read as a status.
#[test]
fn a_status_is_exactly_three_digits() {
    for bad in ["1000", "20", "+20", "2x0", "-200", "0200", "000", "099"] {
        let response = format!("HTTP/1.1 {bad} OK\r\nContent-Length: 0\r\n\r\n");
        let err = fetch::response(response.as_bytes()).unwrap_err();
        assert!(err.contains("bad status line"), "{bad}: {err}");
    }
    let ok = b"HTTP/1.1 999 Odd\r\nContent-Length: 0\r\n\r\n";
    assert_eq!(fetch::response(ok).unwrap(), (999, Vec::new()));
}

fn principal(subject: &str, expires: u64) -> Principal {
    Principal {
        issuer: "https://issuer.test/".into(),
        subject: subject.into(),
        scopes: vec!["mcp:tools".into()],
        expires,
    }
}

/// Issue 34: a remembered token still expires on time (`exp` plus the
/// leeway), and the cache stays within its bounds.
#[test]
fn a_remembered_token_expires_on_time_and_the_cache_is_bounded() {
    let mut cache = Verified::default();
    cache.insert("token-a", principal("a", 1000));
    assert_eq!(
        cache
            .get("token-a", 1000 + SKEW - 1)
            .map(|p| p.subject.as_str()),
        Some("a")
    );
    assert!(cache.get("token-a", 1000 + SKEW).is_none(), "expired");
    assert!(cache.get("token-b", 0).is_none());
    // Keyed by the whole token: a token differing in one byte is unknown.
    assert!(cache.get("token-A", 0).is_none());
    cache.clear();
    assert!(cache.get("token-a", 0).is_none(), "cleared with the keys");
    for i in 0..MAX_VERIFIED + 10 {
        cache.insert(&format!("t{i}"), principal("s", 5000 + i as u64));
        assert!(cache.len() <= MAX_VERIFIED);
    }
    // The latest to expire stayed; the earliest went.
    assert!(cache.get(&format!("t{}", MAX_VERIFIED + 9), 0).is_some());
    assert!(cache.get("t0", 0).is_none());
    let huge = "x".repeat(MAX_VERIFIED_BYTES / 64);
    for i in 0..80 {
        cache.insert(&format!("{huge}{i}"), principal("s", 9000 + i));
    }
    assert!(cache.get(&format!("{huge}79"), 0).is_some());
    assert!(cache.len() < MAX_VERIFIED);
}

fn key(command: &str) -> CommandKey {
    CommandKey {
        module: "main".into(),
        command: command.into(),
    }
}
