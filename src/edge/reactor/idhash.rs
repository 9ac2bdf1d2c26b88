//! A cheap hasher for the reactor's maps whose keys the server chooses
//! itself: call ids, poll tokens, queue tags, the owners of queued calls
//! (the stdio client, a connection number, a session id the server made).
//!
//! The standard `HashMap` hashes with SipHash, which resists keys picked by
//! an attacker to collide; none of these keys can be picked by a client, and
//! a remote call looks them up about forty times, so SipHash on them took
//! 12 % of the server's instructions per call (`bench/callgrind.py`). Maps
//! keyed by what a client sends (peer addresses, names, task ids) keep the
//! standard hasher.
//!
//! Each word is folded in by rotate, xor and a multiplication by an odd
//! constant (the 64-bit golden ratio), so distinct sequential ids stay
//! distinct in every bit range; `finish` rotates the well-mixed high bits
//! down to where the table takes its bucket index.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

/// A `HashMap` keyed by ids the server assigns.
pub(super) type IdMap<K, V> = HashMap<K, V, BuildHasherDefault<IdHasher>>;

const MULTIPLIER: u64 = 0x9e37_79b9_7f4a_7c15;

#[derive(Default, Clone, Copy)]
pub(super) struct IdHasher(u64);

impl IdHasher {
    #[inline]
    fn add(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(MULTIPLIER);
    }
}

impl Hasher for IdHasher {
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.add(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.add(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u8(&mut self, n: u8) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u16(&mut self, n: u16) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u32(&mut self, n: u32) {
        self.add(u64::from(n));
    }

    #[inline]
    fn write_u64(&mut self, n: u64) {
        self.add(n);
    }

    #[inline]
    fn write_usize(&mut self, n: usize) {
        self.add(n as u64);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0.rotate_left(26)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;
    use std::hash::{BuildHasher, Hash};

    fn hash<T: Hash>(value: T) -> u64 {
        BuildHasherDefault::<IdHasher>::default().hash_one(value)
    }

    #[test]
    fn sequential_ids_spread_over_buckets_and_control_bytes() {
        // hashbrown takes the bucket from the low bits and a 7-bit tag from
        // the top ones: both must vary across consecutive ids.
        let low: HashSet<u64> = (0..1024u64).map(|i| hash(i) & 1023).collect();
        assert!(low.len() > 600, "only {} of 1024 buckets used", low.len());
        let top: HashSet<u64> = (0..1024u64).map(|i| hash(i) >> 57).collect();
        assert!(top.len() > 100, "only {} of 128 tags used", top.len());
    }

    #[test]
    fn strings_and_tuples_hash_by_content() {
        assert_eq!(hash("session-a"), hash(String::from("session-a")));
        assert_ne!(hash("session-a"), hash("session-b"));
        assert_ne!(
            hash("a-long-session-identifier-1"),
            hash("a-long-session-identifier-2")
        );
        assert_ne!(hash((1u64, 2u64)), hash((2u64, 1u64)));
    }

    #[test]
    fn maps_work_as_maps() {
        let mut map: IdMap<u64, u64> = IdMap::default();
        for i in 0..10_000 {
            map.insert(i * 4096, i);
        }
        assert_eq!(map.len(), 10_000);
        assert!((0..10_000).all(|i| map[&(i * 4096)] == i));
    }
}
