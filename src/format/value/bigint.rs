//! [`BigInt`]: Morloc's arbitrary-precision `Int` as two's-complement limbs
//! (the voidstar `j` representation), with exact decimal conversion in both
//! directions.

use std::fmt;

/// An arbitrary-precision integer as little-endian two's-complement 64-bit
/// limbs, exactly the voidstar `j` representation.
///
/// INVARIANT: `limbs` is minimal: no redundant sign-extension limb at the top
/// (so 2^63 needs two limbs and -2^63 one); zero is one limb `[0]`.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct BigInt {
    pub limbs: Vec<u64>,
}

/// Why a decimal string is not a [`BigInt`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ParseBigIntError {
    /// Not `-?[0-9]+`.
    Invalid,
    /// More than [`BigInt::MAX_DIGITS`] digits.
    TooLong,
}

impl BigInt {
    /// The most limbs a decoder accepts. Decimal conversion is quadratic in
    /// the limb count, so this bounds the work a hostile value can cause;
    /// 8192 limbs are about 158,000 decimal digits.
    pub const MAX_LIMBS: usize = 8192;

    /// The most decimal digits [`BigInt::parse_decimal`] accepts (fits in
    /// [`BigInt::MAX_LIMBS`]).
    pub const MAX_DIGITS: usize = 150_000;

    pub fn zero() -> BigInt {
        BigInt { limbs: vec![0] }
    }

    pub fn from_i64(v: i64) -> BigInt {
        BigInt {
            limbs: vec![v as u64],
        }
    }

    pub fn from_u64(v: u64) -> BigInt {
        if v >> 63 == 0 {
            BigInt { limbs: vec![v] }
        } else {
            BigInt { limbs: vec![v, 0] }
        }
    }

    /// Builds a value from any two's-complement limbs (empty means zero),
    /// dropping redundant sign-extension limbs.
    pub fn from_limbs(mut limbs: Vec<u64>) -> BigInt {
        if limbs.is_empty() {
            limbs.push(0);
        }
        while limbs.len() > 1 {
            let top = limbs[limbs.len() - 1];
            let below_negative = limbs[limbs.len() - 2] >> 63 == 1;
            if (top == 0 && !below_negative) || (top == u64::MAX && below_negative) {
                limbs.pop();
            } else {
                break;
            }
        }
        BigInt { limbs }
    }

    pub fn is_negative(&self) -> bool {
        self.limbs.last().is_some_and(|l| l >> 63 == 1)
    }

    /// The value as an `i64`, if it fits.
    pub fn to_i64(&self) -> Option<i64> {
        match self.limbs.as_slice() {
            [v] => Some(*v as i64),
            _ => None,
        }
    }

    /// The value as a `u64`, if it fits.
    pub fn to_u64(&self) -> Option<u64> {
        match self.limbs.as_slice() {
            [v] if v >> 63 == 0 => Some(*v),
            [v, 0] => Some(*v),
            _ => None,
        }
    }

    /// Parses `-?[0-9]+` exactly (leading zeros allowed, `-0` is zero).
    pub fn parse_decimal(text: &str) -> Result<BigInt, ParseBigIntError> {
        let (negative, digits) = match text.strip_prefix('-') {
            Some(rest) => (true, rest),
            None => (false, text),
        };
        if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
            return Err(ParseBigIntError::Invalid);
        }
        if digits.len() > Self::MAX_DIGITS {
            return Err(ParseBigIntError::TooLong);
        }
        // Magnitude, base 2^64, built 19 decimal digits at a time.
        let mut magnitude: Vec<u64> = vec![0];
        let bytes = digits.as_bytes();
        let first = bytes.len() % 19;
        let mut chunks: Vec<&[u8]> = Vec::with_capacity(bytes.len() / 19 + 1);
        if first > 0 {
            chunks.push(&bytes[..first]);
        }
        chunks.extend(bytes[first..].chunks(19));
        for chunk in chunks {
            let mut chunk_value: u64 = 0;
            for &b in chunk {
                chunk_value = chunk_value * 10 + u64::from(b - b'0');
            }
            let scale = 10u64.pow(chunk.len() as u32);
            let mut carry = chunk_value as u128;
            for limb in magnitude.iter_mut() {
                let wide = (*limb as u128) * (scale as u128) + carry;
                *limb = wide as u64;
                carry = wide >> 64;
            }
            if carry > 0 {
                magnitude.push(carry as u64);
            }
        }
        // One spare limb so the sign bit has room, then normalise.
        magnitude.push(0);
        if negative {
            negate_in_place(&mut magnitude);
        }
        Ok(BigInt::from_limbs(magnitude))
    }

    /// The exact decimal text (`-` for negatives, no leading zeros).
    pub fn to_decimal(&self) -> String {
        if let Some(v) = self.to_i64() {
            return v.to_string();
        }
        let negative = self.is_negative();
        let mut magnitude = self.limbs.clone();
        if negative {
            negate_in_place(&mut magnitude);
        }
        // Repeated division by 10^19 yields base-10^19 digits, least
        // significant first.
        const CHUNK: u64 = 10_000_000_000_000_000_000;
        let mut chunks = Vec::new();
        while magnitude.len() > 1 || magnitude[0] != 0 {
            let mut rem: u128 = 0;
            for limb in magnitude.iter_mut().rev() {
                let cur = (rem << 64) | (*limb as u128);
                *limb = (cur / CHUNK as u128) as u64;
                rem = cur % CHUNK as u128;
            }
            chunks.push(rem as u64);
            while magnitude.len() > 1 && magnitude[magnitude.len() - 1] == 0 {
                magnitude.pop();
            }
        }
        let mut out = String::with_capacity(chunks.len() * 19 + 1);
        if negative {
            out.push('-');
        }
        let mut iter = chunks.iter().rev();
        if let Some(top) = iter.next() {
            out.push_str(&top.to_string());
        }
        for chunk in iter {
            out.push_str(&format!("{chunk:019}"));
        }
        out
    }
}

/// Two's-complement negation of little-endian limbs, in place.
fn negate_in_place(limbs: &mut [u64]) {
    let mut carry = true;
    for limb in limbs.iter_mut() {
        let (sum, overflow) = (!*limb).overflowing_add(u64::from(carry));
        *limb = sum;
        carry = overflow;
    }
}

impl fmt::Display for BigInt {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.to_decimal())
    }
}
