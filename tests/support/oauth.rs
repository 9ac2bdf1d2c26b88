//! A mock OAuth authorization server for the resource-server tests: the
//! committed test keys (`tests/data/oauth`, PKCS#8), their JWKs, tokens
//! minted with them, and a loopback HTTP server in a thread that serves the
//! current key set and counts its fetches.

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use ring::rand::SystemRandom;
use ring::signature::{self, EcdsaKeyPair, KeyPair, RsaKeyPair};
use serde_json::{json, Value};

use super::proc::data;

/// Far enough ahead that a token never expires while tests run.
pub const FUTURE: u64 = 4_102_444_800;
/// Long past.
pub const PAST: u64 = 946_684_800;

/// Seconds since the Unix epoch now, for claims that must be near it.
pub fn unix_now() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// One of the committed keys (`rsa1`, `rsa2`, `rogue`: RSA 2048; `ec1`: P-256).
pub fn key(name: &str) -> Vec<u8> {
    let path = data(&format!("oauth/{name}.pk8"));
    std::fs::read(&path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()))
}

/// Unpadded base64url.
pub fn b64(bytes: &[u8]) -> String {
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

fn is_ec(der: &[u8]) -> bool {
    RsaKeyPair::from_pkcs8(der).is_err()
}

/// The public JWK of key `name` under `kid`.
pub fn jwk(name: &str, kid: &str) -> Value {
    let der = key(name);
    if is_ec(&der) {
        let rng = SystemRandom::new();
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .expect("a P-256 PKCS#8 key");
        let p = pair.public_key().as_ref();
        json!({"kty": "EC", "crv": "P-256", "kid": kid, "use": "sig", "alg": "ES256",
               "x": b64(&p[1..33]), "y": b64(&p[33..])})
    } else {
        let pair = RsaKeyPair::from_pkcs8(&der).expect("an RSA PKCS#8 key");
        let c = signature::RsaPublicKeyComponents::<Vec<u8>>::from(pair.public());
        json!({"kty": "RSA", "kid": kid, "use": "sig", "alg": "RS256", "n": b64(&c.n), "e": b64(&c.e)})
    }
}

/// A key set of `(key name, kid)` pairs.
pub fn jwks(keys: &[(&str, &str)]) -> String {
    let keys: Vec<Value> = keys.iter().map(|(name, kid)| jwk(name, kid)).collect();
    json!({ "keys": keys }).to_string()
}

/// A compact JWS of `claims` under `header`, signed with key `name` (RS256
/// or ES256 by the key's kind, whatever the header says).
pub fn mint(header: &Value, claims: &Value, name: &str) -> String {
    let input = format!(
        "{}.{}",
        b64(header.to_string().as_bytes()),
        b64(claims.to_string().as_bytes())
    );
    let der = key(name);
    let rng = SystemRandom::new();
    let sig = if is_ec(&der) {
        let pair =
            EcdsaKeyPair::from_pkcs8(&signature::ECDSA_P256_SHA256_FIXED_SIGNING, &der, &rng)
                .expect("a P-256 PKCS#8 key");
        pair.sign(&rng, input.as_bytes())
            .expect("signs")
            .as_ref()
            .to_vec()
    } else {
        let pair = RsaKeyPair::from_pkcs8(&der).expect("an RSA PKCS#8 key");
        let mut sig = vec![0; pair.public().modulus_len()];
        pair.sign(
            &signature::RSA_PKCS1_SHA256,
            &rng,
            input.as_bytes(),
            &mut sig,
        )
        .expect("signs");
        sig
    };
    format!("{input}.{}", b64(&sig))
}

/// How the mock issuer answers.
#[derive(Clone, Copy, Debug, Default)]
pub struct Serving {
    /// Keep each connection open after the answer (its end is only its
    /// `Content-Length`).
    pub keep_open: bool,
    /// Answer this many first fetches with a 500.
    pub fail_first: usize,
}

/// The mock authorization server: serves `GET /jwks` (the current set) on
/// loopback from a thread, for as long as the test runs.
pub struct Issuer {
    pub addr: SocketAddr,
    jwks: Arc<Mutex<String>>,
    fetches: Arc<AtomicUsize>,
}

impl Issuer {
    pub fn start(jwks: String) -> Issuer {
        Issuer::start_with(jwks, Serving::default())
    }

    /// An issuer that serves as `how` says.
    pub fn start_with(jwks: String, how: Serving) -> Issuer {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the mock issuer");
        let addr = listener.local_addr().expect("its address");
        let current = Arc::new(Mutex::new(jwks));
        let fetches = Arc::new(AtomicUsize::new(0));
        let (set, count) = (current.clone(), fetches.clone());
        std::thread::spawn(move || {
            // Connections kept open, as a keep-alive server would.
            let mut held = Vec::new();
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { continue };
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && stream.read(&mut byte).unwrap_or(0) == 1 {
                    head.push(byte[0]);
                }
                let n = count.fetch_add(1, Ordering::SeqCst) + 1;
                let body = set.lock().map(|s| s.clone()).unwrap_or_default();
                let (status, body) = match n <= how.fail_first {
                    true => ("500 Unavailable", String::new()),
                    false => ("200 OK", body),
                };
                let connection = if how.keep_open { "keep-alive" } else { "close" };
                let reply = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: {connection}\r\n\r\n{body}",
                    body.len()
                );
                let _ = stream.write_all(reply.as_bytes());
                if how.keep_open {
                    held.push(stream);
                }
            }
        });
        Issuer {
            addr,
            jwks: current,
            fetches,
        }
    }

    /// The issuer identifier tokens carry in `iss`.
    pub fn issuer(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn jwks_url(&self) -> String {
        format!("http://{}/jwks", self.addr)
    }

    /// Serves `jwks` from now on (a key rotation).
    pub fn rotate(&self, jwks: String) {
        *self.jwks.lock().expect("the key set lock") = jwks;
    }

    /// How many times the key set was fetched.
    pub fn fetches(&self) -> usize {
        self.fetches.load(Ordering::SeqCst)
    }
}
