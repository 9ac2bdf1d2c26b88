//! Byte copying for the static (musl) build, which exports these as `memcpy`
//! and `memmove` (src/main.rs).
//!
//! The server's hot paths copy many short runs of bytes (JSON keys, small
//! strings, pieces of output lines). musl's x86_64 `memcpy` starts every copy
//! with `rep movsq`, whose start-up cost dominates such short copies: with it
//! a third of the CPU time of a `tools/list` loop went to `memcpy`. Here, up
//! to 64 bytes are moved with at most four unaligned 16-byte loads followed
//! by the stores (so any overlap is fine), and longer runs with `rep movsb`,
//! which current x86_64 processors execute as a fast string copy.
//!
//! Nothing here may be written as a loop of loads and stores: the compiler
//! would recognise the loop as a copy and call `memcpy`, that is, itself.

/// Copies up to 64 bytes; every load happens before any store, so the ranges
/// may overlap in any way.
///
/// # Safety
///
/// `src` must be readable and `dst` writable for `n <= 64` bytes.
#[cfg(target_arch = "x86_64")]
#[inline(always)]
unsafe fn copy_short(dst: *mut u8, src: *const u8, n: usize) {
    debug_assert!(n <= 64);
    // SAFETY: every access lies within the first `n` bytes of its range.
    unsafe {
        if n >= 32 {
            let a = src.cast::<u128>().read_unaligned();
            let b = src.add(16).cast::<u128>().read_unaligned();
            let c = src.add(n - 32).cast::<u128>().read_unaligned();
            let d = src.add(n - 16).cast::<u128>().read_unaligned();
            dst.cast::<u128>().write_unaligned(a);
            dst.add(16).cast::<u128>().write_unaligned(b);
            dst.add(n - 32).cast::<u128>().write_unaligned(c);
            dst.add(n - 16).cast::<u128>().write_unaligned(d);
        } else if n >= 16 {
            let a = src.cast::<u128>().read_unaligned();
            let b = src.add(n - 16).cast::<u128>().read_unaligned();
            dst.cast::<u128>().write_unaligned(a);
            dst.add(n - 16).cast::<u128>().write_unaligned(b);
        } else if n >= 8 {
            let a = src.cast::<u64>().read_unaligned();
            let b = src.add(n - 8).cast::<u64>().read_unaligned();
            dst.cast::<u64>().write_unaligned(a);
            dst.add(n - 8).cast::<u64>().write_unaligned(b);
        } else if n >= 4 {
            let a = src.cast::<u32>().read_unaligned();
            let b = src.add(n - 4).cast::<u32>().read_unaligned();
            dst.cast::<u32>().write_unaligned(a);
            dst.add(n - 4).cast::<u32>().write_unaligned(b);
        } else if n >= 2 {
            let a = src.cast::<u16>().read_unaligned();
            let b = src.add(n - 2).cast::<u16>().read_unaligned();
            dst.cast::<u16>().write_unaligned(a);
            dst.add(n - 2).cast::<u16>().write_unaligned(b);
        } else if n == 1 {
            dst.write(src.read());
        }
    }
}

/// `memcpy`: copies `n` bytes between ranges that do not overlap, or where
/// `dst` is below `src`.
///
/// # Safety
///
/// `src` must be readable and `dst` writable for `n` bytes; if the ranges
/// overlap, `dst` must not be above `src`.
#[cfg(target_arch = "x86_64")]
pub unsafe fn copy_forward(dst: *mut u8, src: *const u8, n: usize) {
    if n <= 64 {
        // SAFETY: forwarded from the caller.
        unsafe { copy_short(dst, src, n) };
        return;
    }
    // SAFETY: forwarded from the caller; the direction flag is clear on
    // entry to any function (System V ABI), so this copies upwards, which is
    // correct for `dst` below `src`.
    unsafe {
        std::arch::asm!(
            "rep movsb",
            inout("rcx") n => _,
            inout("rdi") dst => _,
            inout("rsi") src => _,
            options(nostack, preserves_flags)
        );
    }
}

/// `memmove`: copies `n` bytes between ranges that may overlap.
///
/// # Safety
///
/// `src` must be readable and `dst` writable for `n` bytes.
#[cfg(target_arch = "x86_64")]
pub unsafe fn copy_any(dst: *mut u8, src: *const u8, n: usize) {
    let (d, s) = (dst as usize, src as usize);
    if n <= 64 || d <= s || d >= s + n {
        // SAFETY: short copies tolerate any overlap; otherwise `dst` is
        // below `src` or the ranges are disjoint.
        unsafe { copy_forward(dst, src, n) };
        return;
    }
    // `dst` overlaps the end of `src`: copy downwards, from the last byte.
    // Rare (inserting into the middle of a buffer); not a fast path.
    // SAFETY: forwarded from the caller; the direction flag is restored.
    unsafe {
        std::arch::asm!(
            "std",
            "rep movsb",
            "cld",
            inout("rcx") n => _,
            inout("rdi") dst.add(n - 1) => _,
            inout("rsi") src.add(n - 1) => _,
            options(nostack)
        );
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    fn pattern(len: usize) -> Vec<u8> {
        (0..len).map(|i| (i * 7 + 3) as u8).collect()
    }

    #[test]
    fn copies_every_length_and_alignment() {
        let src = pattern(400);
        for n in 0..300 {
            for offset in 0..8 {
                for dst_offset in 0..8 {
                    let mut dst = vec![0xAAu8; 320];
                    unsafe {
                        copy_forward(
                            dst.as_mut_ptr().add(dst_offset),
                            src.as_ptr().add(offset),
                            n,
                        )
                    };
                    assert_eq!(
                        &dst[dst_offset..dst_offset + n],
                        &src[offset..offset + n],
                        "n={n}"
                    );
                    assert!(
                        dst[..dst_offset].iter().all(|&b| b == 0xAA),
                        "wrote before, n={n}"
                    );
                    assert!(
                        dst[dst_offset + n..].iter().all(|&b| b == 0xAA),
                        "wrote past, n={n}"
                    );
                }
            }
        }
    }

    #[test]
    fn overlapping_moves_in_both_directions() {
        for n in [
            0, 1, 2, 3, 5, 8, 15, 16, 17, 31, 32, 33, 63, 64, 65, 100, 257, 4096,
        ] {
            for shift in [1, 2, 7, 8, 16, 33, 64, 100] {
                let original = pattern(n + shift);
                // Up: dst = src + shift.
                let mut buf = original.clone();
                unsafe { copy_any(buf.as_mut_ptr().add(shift), buf.as_ptr(), n) };
                assert_eq!(
                    &buf[shift..shift + n],
                    &original[..n],
                    "up n={n} shift={shift}"
                );
                assert_eq!(&buf[..shift], &original[..shift]);
                // Down: dst = src - shift.
                let mut buf = original.clone();
                unsafe { copy_any(buf.as_mut_ptr(), buf.as_ptr().add(shift), n) };
                assert_eq!(
                    &buf[..n],
                    &original[shift..shift + n],
                    "down n={n} shift={shift}"
                );
                assert_eq!(&buf[n..], &original[n..], "down n={n} shift={shift}");
            }
        }
    }
}
