//! The instance id, and the ids an instance mints for state it keeps.
//!
//! Several servers may run behind one load balancer. Every id naming state
//! that lives on one server (a legacy `Mcp-Session-Id`, a task id) has the
//! form `NAME.<random>`: the server's instance id, a dot, then 32 lowercase
//! hex digits from the random source. A balancer routes on the text before
//! the first dot, with no shared store; a server recognises only ids carrying
//! its own name, so a request that reaches the wrong instance finds nothing
//! (and gets the answer for an unknown id), never another client's state.
//!
//! Pure: the caller supplies the random bytes.

use std::fmt;

/// Longest instance id accepted (it travels in every session and task id).
pub const MAX_LEN: usize = 64;

/// A checked instance id: 1 to [`MAX_LEN`] ASCII letters, digits, `-`, `_`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct InstanceId(String);

impl InstanceId {
    /// Checks `text`; the error says what is allowed.
    pub fn parse(text: &str) -> Result<InstanceId, String> {
        if text.is_empty() {
            return Err("an instance id needs at least one character".into());
        }
        if text.len() > MAX_LEN {
            return Err(format!(
                "an instance id has at most {MAX_LEN} characters, this one has {}",
                text.len()
            ));
        }
        if let Some(bad) = text
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || *c == '-' || *c == '_'))
        {
            return Err(format!(
                "'{bad}' is not allowed in an instance id (only letters, digits, '-' and '_')"
            ));
        }
        Ok(InstanceId(text.to_string()))
    }

    /// The default of a process that was given none: `i` and 12 hex digits
    /// of `random`, unique per process in practice.
    pub fn from_random(random: [u8; 6]) -> InstanceId {
        InstanceId(format!("i{}", hex(&random)))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// A new id for state kept by this instance: `NAME.` and `random` as 32
    /// lowercase hex digits.
    pub fn mint(&self, random: &[u8; 16]) -> String {
        format!("{}.{}", self.0, hex(random))
    }

    /// The random part of `id` if this instance minted it (`NAME.` followed
    /// by 32 lowercase hex digits, as bytes); `None` for anything else,
    /// including a well-formed id of another instance.
    pub fn owns(&self, id: &str) -> Option<[u8; 16]> {
        let rest = id.strip_prefix(self.0.as_str())?.strip_prefix('.')?;
        parse_hex(rest)
    }
}

impl fmt::Display for InstanceId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// The instance part of a minted id (the text before its first dot), as a
/// load balancer reads it; `None` when there is no dot.
pub fn instance_of(id: &str) -> Option<&str> {
    id.split_once('.').map(|(name, _)| name)
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Exactly 32 lowercase hex digits as 16 bytes.
fn parse_hex(digits: &str) -> Option<[u8; 16]> {
    let digits = digits.as_bytes();
    if digits.len() != 32 {
        return None;
    }
    let nibble = |b: u8| match b {
        b'0'..=b'9' => Some(b - b'0'),
        b'a'..=b'f' => Some(b - b'a' + 10),
        _ => None,
    };
    let mut key = [0u8; 16];
    for (byte, pair) in key.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = nibble(pair[0])? << 4 | nibble(pair[1])?;
    }
    Some(key)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        for good in ["a", "Z", "7", "mcp-1", "node_02", "A-b_C-9"] {
            assert_eq!(InstanceId::parse(good).unwrap().as_str(), good);
        }
        assert!(InstanceId::parse(&"x".repeat(MAX_LEN)).is_ok());
        for (bad, why) in [
            ("", "at least one"),
            ("a.b", "'.' is not allowed"),
            ("a b", "' ' is not allowed"),
            ("é", "'é' is not allowed"),
            ("a/b", "'/' is not allowed"),
        ] {
            let err = InstanceId::parse(bad).unwrap_err();
            assert!(err.contains(why), "{bad:?}: {err}");
        }
        let err = InstanceId::parse(&"x".repeat(MAX_LEN + 1)).unwrap_err();
        assert!(err.contains("at most 64"), "{err}");
        let default = InstanceId::from_random([0, 1, 0xab, 0xcd, 0xef, 0xff]);
        assert_eq!(default.as_str(), "i0001abcdefff");
        assert!(InstanceId::parse(default.as_str()).is_ok());
    }

    #[test]
    fn minted_ids_are_recognised_only_by_their_instance() {
        let a = InstanceId::parse("a").unwrap();
        let ab = InstanceId::parse("ab").unwrap();
        let mut random = [0u8; 16];
        random[0] = 0x9b;
        random[15] = 0x01;
        let id = a.mint(&random);
        assert_eq!(id, "a.9b000000000000000000000000000001");
        assert_eq!(instance_of(&id), Some("a"));
        assert_eq!(a.owns(&id), Some(random));
        assert_eq!(ab.owns(&id), None, "another instance's id");
        assert_eq!(a.owns(&ab.mint(&random)), None, "a prefix of the name");
        for bad in [
            "",
            "a",
            "a.",
            "9b000000000000000000000000000001",
            "a.9B000000000000000000000000000001",
            "a.9b00000000000000000000000000001",
            "a.9b0000000000000000000000000000011",
            "a..9b000000000000000000000000000001",
            " a.9b000000000000000000000000000001",
        ] {
            assert_eq!(a.owns(bad), None, "{bad:?}");
        }
        assert_eq!(instance_of("no-dot"), None);
    }
}
