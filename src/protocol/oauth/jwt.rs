//! Compact JWS (RFC 7515 §7.1) as OAuth access tokens carry it: three
//! base64url parts, a JSON header naming `alg` and `kid`, JSON claims, and
//! the signature over the first two parts as sent. Also base64url itself
//! (RFC 4648 §5, no padding), which JWK key parameters use too.
//!
//! Pure: parsing only; the signature is checked by `jwks`.

use serde_json::{Map, Value as Json};

/// Most bytes of a token accepted (headers carry them; real ones are a few
/// KiB at most).
pub const MAX_TOKEN: usize = 16 * 1024;

/// A compact JWS split and decoded, not yet verified.
#[derive(Clone, Debug, PartialEq)]
pub struct Jws<'t> {
    /// The header's `alg`.
    pub alg: String,
    /// The header's `kid`, if any.
    pub kid: Option<String>,
    /// `BASE64URL(header) '.' BASE64URL(payload)`, as sent: what is signed.
    pub signing_input: &'t [u8],
    pub signature: Vec<u8>,
    /// The payload, a JSON object.
    pub claims: Map<String, Json>,
}

/// Decodes unpadded base64url. `None` for any byte outside the alphabet,
/// padding, a length that cannot occur (4n+1), or non-zero trailing bits.
pub fn base64url(text: &[u8]) -> Option<Vec<u8>> {
    fn value(b: u8) -> Option<u32> {
        Some(match b {
            b'A'..=b'Z' => b - b'A',
            b'a'..=b'z' => b - b'a' + 26,
            b'0'..=b'9' => b - b'0' + 52,
            b'-' => 62,
            b'_' => 63,
            _ => return None,
        } as u32)
    }
    if text.len() % 4 == 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() * 3 / 4);
    for chunk in text.chunks(4) {
        let mut acc = 0u32;
        for &b in chunk {
            acc = (acc << 6) | value(b)?;
        }
        match chunk.len() {
            4 => out.extend_from_slice(&[(acc >> 16) as u8, (acc >> 8) as u8, acc as u8]),
            3 => {
                // 18 bits: two bytes and 2 bits that must be zero.
                if acc & 0b11 != 0 {
                    return None;
                }
                out.extend_from_slice(&[(acc >> 10) as u8, (acc >> 2) as u8]);
            }
            _ => {
                // 12 bits: one byte and 4 bits that must be zero.
                if acc & 0b1111 != 0 {
                    return None;
                }
                out.push((acc >> 4) as u8);
            }
        }
    }
    Some(out)
}

/// Splits and decodes a compact JWS. The error says what is wrong, in
/// words fit for an `error_description`.
pub fn parse(token: &str) -> Result<Jws<'_>, &'static str> {
    if token.len() > MAX_TOKEN {
        return Err("token too long");
    }
    let mut parts = token.split('.');
    let (Some(head), Some(payload), Some(sig), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err("not a compact JWS (three dot-separated parts)");
    };
    let header = base64url(head.as_bytes()).ok_or("header is not base64url")?;
    let header: Json =
        crate::format::json::parse_bytes(&header).map_err(|_| "header is not JSON")?;
    let Json::Object(header) = header else {
        return Err("header is not a JSON object");
    };
    let alg = match header.get("alg") {
        Some(Json::String(alg)) => alg.clone(),
        _ => return Err("header has no alg"),
    };
    if header.contains_key("crit") {
        // No extension is understood, so none may be critical.
        return Err("header has crit extensions");
    }
    let kid = match header.get("kid") {
        None => None,
        Some(Json::String(kid)) => Some(kid.clone()),
        Some(_) => return Err("header kid is not a string"),
    };
    let claims = base64url(payload.as_bytes()).ok_or("payload is not base64url")?;
    let claims: Json =
        crate::format::json::parse_bytes(&claims).map_err(|_| "payload is not JSON")?;
    let Json::Object(claims) = claims else {
        return Err("payload is not a JSON object");
    };
    let signature = base64url(sig.as_bytes()).ok_or("signature is not base64url")?;
    Ok(Jws {
        alg,
        kid,
        signing_input: &token.as_bytes()[..head.len() + 1 + payload.len()],
        signature,
        claims,
    })
}
