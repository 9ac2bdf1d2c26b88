//! JSON Web Key Sets (RFC 7517): the issuer's public keys, parsed into the
//! two kinds accepted (RSA for RS256, EC P-256 for ES256), and signature
//! verification with them. The cryptography is `ring`'s; nothing here
//! computes on key material beyond decoding it.
//!
//! Keys of other kinds (`oct`, other curves, encryption keys) are skipped,
//! not errors: an issuer may publish them for other uses.

#[cfg(feature = "oauth")]
use ring::signature::{self, UnparsedPublicKey};
use serde_json::{Map, Value as Json};

use super::jwt::base64url;

/// Most bytes of a JWKS document accepted.
pub const MAX_JWKS: usize = 1024 * 1024;

/// The signature algorithms accepted. Anything else (`none`, `HS256`,
/// `RS512`, `PS256`, ...) is refused before any key is looked at.
pub const ALGS: [&str; 2] = ["RS256", "ES256"];

/// One usable public key.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Key {
    pub kid: Option<String>,
    pub material: Material,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Material {
    /// Modulus and public exponent, big-endian.
    Rsa { n: Vec<u8>, e: Vec<u8> },
    /// The uncompressed point `04 || x || y` on P-256.
    P256 { point: Vec<u8> },
}

impl Key {
    /// The one algorithm this key verifies.
    pub fn alg(&self) -> &'static str {
        match self.material {
            Material::Rsa { .. } => "RS256",
            Material::P256 { .. } => "ES256",
        }
    }

    /// Whether `signature` is this key's signature of `message` under `alg`;
    /// false for an `alg` the key is not for, and always false in a build
    /// without the `oauth` feature (which refuses `--oauth-issuer`).
    #[cfg(not(feature = "oauth"))]
    pub fn verifies(&self, _alg: &str, _message: &[u8], _signature: &[u8]) -> bool {
        false
    }

    /// Whether `signature` is this key's signature of `message` under `alg`;
    /// false for an `alg` the key is not for.
    #[cfg(feature = "oauth")]
    pub fn verifies(&self, alg: &str, message: &[u8], signature: &[u8]) -> bool {
        if alg != self.alg() {
            return false;
        }
        match &self.material {
            Material::Rsa { n, e } => signature::RsaPublicKeyComponents { n, e }
                .verify(&signature::RSA_PKCS1_2048_8192_SHA256, message, signature)
                .is_ok(),
            Material::P256 { point } => {
                UnparsedPublicKey::new(&signature::ECDSA_P256_SHA256_FIXED, point)
                    .verify(message, signature)
                    .is_ok()
            }
        }
    }
}

/// A parsed key set.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Jwks {
    pub keys: Vec<Key>,
}

impl Jwks {
    /// Parses a JWKS document. An error for anything that is not
    /// `{"keys": [...]}`, for a key of a usable kind with bad parameters,
    /// and for a set with no usable key.
    pub fn parse(text: &[u8]) -> Result<Jwks, String> {
        if text.len() > MAX_JWKS {
            return Err(format!("the JWKS is over {MAX_JWKS} bytes"));
        }
        let doc: Json = crate::format::json::parse_bytes(text)
            .map_err(|e| format!("the JWKS is not JSON: {e}"))?;
        let Some(Json::Array(entries)) = doc.get("keys") else {
            return Err("the JWKS has no \"keys\" array".into());
        };
        let mut keys = Vec::new();
        for (i, entry) in entries.iter().enumerate() {
            let Json::Object(jwk) = entry else {
                return Err(format!("keys[{i}] is not an object"));
            };
            if let Some(key) = key(jwk).map_err(|e| format!("keys[{i}]: {e}"))? {
                keys.push(key);
            }
        }
        if keys.is_empty() {
            return Err("the JWKS has no RSA or P-256 signing key".into());
        }
        Ok(Jwks { keys })
    }

    /// The key for a token's `kid` and `alg`: the one with that `kid`; with
    /// no `kid`, the only key for `alg`. `None` when there is none (or, with
    /// no `kid`, more than one).
    pub fn find(&self, kid: Option<&str>, alg: &str) -> Option<&Key> {
        match kid {
            Some(kid) => self.keys.iter().find(|k| k.kid.as_deref() == Some(kid)),
            None => {
                let mut of_alg = self.keys.iter().filter(|k| k.alg() == alg);
                let first = of_alg.next()?;
                of_alg.next().is_none().then_some(first)
            }
        }
    }
}

/// One JWK: `Some` for a usable signing key, `None` for a kind skipped.
fn key(jwk: &Map<String, Json>) -> Result<Option<Key>, String> {
    let text = |name: &str| match jwk.get(name) {
        None => Ok(None),
        Some(Json::String(s)) => Ok(Some(s.as_str())),
        Some(_) => Err(format!("\"{name}\" is not a string")),
    };
    let bytes = |name: &str| -> Result<Vec<u8>, String> {
        let value = text(name)?.ok_or_else(|| format!("no \"{name}\""))?;
        base64url(value.as_bytes()).ok_or_else(|| format!("\"{name}\" is not base64url"))
    };
    if text("use")?.is_some_and(|u| u != "sig") {
        return Ok(None);
    }
    let kid = text("kid")?.map(str::to_string);
    let alg = text("alg")?;
    let material = match text("kty")? {
        Some("RSA") => {
            if alg.is_some_and(|a| a != "RS256") {
                return Ok(None);
            }
            let n = strip_zeros(bytes("n")?);
            let e = strip_zeros(bytes("e")?);
            if n.len() < 256 {
                return Err("RSA modulus shorter than 2048 bits".into());
            }
            Material::Rsa { n, e }
        }
        Some("EC") => {
            if text("crv")? != Some("P-256") || alg.is_some_and(|a| a != "ES256") {
                return Ok(None);
            }
            let (x, y) = (bytes("x")?, bytes("y")?);
            if x.len() != 32 || y.len() != 32 {
                return Err("P-256 coordinates must be 32 bytes each".into());
            }
            let mut point = Vec::with_capacity(65);
            point.push(4);
            point.extend_from_slice(&x);
            point.extend_from_slice(&y);
            Material::P256 { point }
        }
        Some(_) => return Ok(None),
        None => return Err("no \"kty\"".into()),
    };
    Ok(Some(Key { kid, material }))
}

/// Big-endian integers without leading zero bytes (how `ring` wants them;
/// some issuers pad the modulus).
fn strip_zeros(mut bytes: Vec<u8>) -> Vec<u8> {
    let zeros = bytes.iter().take_while(|b| **b == 0).count();
    bytes.drain(..zeros);
    bytes
}
