//! A small size-class allocator, used as the global allocator of the static
//! (musl) build.
//!
//! musl's allocator gives freed pages back to the kernel eagerly: serving one
//! `tools` request cost ~100 `mmap`/`munmap` pairs and made `tools/list` twice
//! as slow as with glibc. This allocator keeps freed blocks for reuse instead,
//! which is what a long-running server wants:
//!
//! - Requests up to [`SMALL_MAX`] bytes (with alignment up to a page) are
//!   rounded up to one of [`CLASSES`] size classes: steps of 16 bytes up to
//!   128, then four classes per power of two. Each class has a free list
//!   threaded through the freed blocks themselves; a class with an empty list
//!   carves a block off the current 1 MiB arena, so memory is touched only
//!   when it is first used. Small blocks are never returned to the kernel,
//!   so the heap stays at its high-water mark (the soak benchmark watches
//!   that it stays flat).
//! - Larger requests get their own anonymous mapping; growing one is a
//!   `mremap`, which moves page tables instead of copying bytes, and freeing
//!   one unmaps it.
//!
//! Which path a block took is recomputed from its `Layout`, so blocks carry
//! no header. A class whose size is a power of two is carved at addresses
//! aligned to that size (up to a page), which is how over-aligned requests
//! are served from the classes.
//!
//! The server is single-threaded; a spin lock makes the allocator safe
//! anyway (the unit tests hammer it from several threads).

use std::alloc::{GlobalAlloc, Layout};
use std::cell::UnsafeCell;
use std::ptr;
use std::sync::atomic::{AtomicBool, Ordering};

/// The largest request served from the size classes.
pub const SMALL_MAX: usize = 64 * 1024;
/// The number of size classes: 8 steps of 16 bytes up to 128, then four in
/// each of the 9 octaves from 128 bytes to 64 KiB.
pub const CLASSES: usize = 8 + 4 * 9;

const PAGE: usize = 4096;
/// The size of the arenas small blocks are carved from.
const ARENA: usize = 1 << 20;
/// The alignment every block has, whatever its class.
const MIN_ALIGN: usize = 16;

/// The global allocator of the static build. Zero-sized: the state is a
/// process-wide static.
pub struct SizeClassAlloc;

/// The size class of a request of `size` bytes (`1..=SMALL_MAX`): the smallest
/// class whose blocks hold it.
pub fn class_of(size: usize) -> usize {
    debug_assert!(size <= SMALL_MAX);
    if size <= 128 {
        return size.saturating_sub(1) / 16;
    }
    // 2^(bits-1) <= size-1 < 2^bits; four classes per such octave.
    let bits = (usize::BITS - (size - 1).leading_zeros()) as usize;
    let step = 1usize << (bits - 3);
    let quarter = (size - (1 << (bits - 1))).div_ceil(step);
    8 + (bits - 8) * 4 + (quarter - 1)
}

/// The block size of class `class`.
pub fn class_size(class: usize) -> usize {
    if class < 8 {
        return (class + 1) * 16;
    }
    let bits = 8 + (class - 8) / 4;
    let quarter = (class - 8) % 4 + 1;
    (1 << (bits - 1)) + quarter * (1 << (bits - 3))
}

/// Where a layout is served from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Route {
    Class(usize),
    /// Its own mapping of this many bytes (a multiple of the page size).
    Mapped(usize),
}

// Inlined: at opt-level 2 (the static build) it was otherwise a call of
// its own on every allocation and free.
#[inline]
fn route(layout: Layout) -> Route {
    let (size, align) = (layout.size().max(1), layout.align());
    if align <= MIN_ALIGN && size <= SMALL_MAX {
        return Route::Class(class_of(size));
    }
    if align <= PAGE {
        // A power-of-two class at least as large as the alignment is carved
        // at addresses aligned to its size.
        let pow = size.max(align).next_power_of_two();
        if pow <= SMALL_MAX {
            return Route::Class(class_of(pow));
        }
    }
    Route::Mapped(size.next_multiple_of(PAGE))
}

/// The alignment of a class's blocks: their size if that is a power of two
/// (up to a page), otherwise the minimum.
fn class_align(class: usize) -> usize {
    let size = class_size(class);
    if size.is_power_of_two() {
        size.min(PAGE)
    } else {
        MIN_ALIGN
    }
}

struct State {
    /// Head of each class's free list; a freed block's first word points at
    /// the next one.
    free: [*mut u8; CLASSES],
    /// The unused part of the current arena.
    next: usize,
    end: usize,
}

struct Heap {
    locked: AtomicBool,
    state: UnsafeCell<State>,
}

// SAFETY: `state` is only touched while `locked` is held.
unsafe impl Sync for Heap {}

static HEAP: Heap = Heap {
    locked: AtomicBool::new(false),
    state: UnsafeCell::new(State {
        free: [ptr::null_mut(); CLASSES],
        next: 0,
        end: 0,
    }),
};

impl Heap {
    fn with<R>(&self, f: impl FnOnce(&mut State) -> R) -> R {
        while self
            .locked
            .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
            .is_err()
        {
            std::hint::spin_loop();
        }
        // SAFETY: the lock is held until the store below.
        let result = f(unsafe { &mut *self.state.get() });
        self.locked.store(false, Ordering::Release);
        result
    }
}

fn map(len: usize) -> *mut u8 {
    // SAFETY: an anonymous private mapping has no preconditions.
    let p = unsafe {
        libc::mmap(
            ptr::null_mut(),
            len,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_PRIVATE | libc::MAP_ANONYMOUS,
            -1,
            0,
        )
    };
    if p == libc::MAP_FAILED {
        ptr::null_mut()
    } else {
        p.cast()
    }
}

/// A mapping of `len` bytes (a page multiple) aligned to `align`, which may
/// exceed the page size: over-map, then unmap the slack on both sides.
fn map_aligned(len: usize, align: usize) -> *mut u8 {
    if align <= PAGE {
        return map(len);
    }
    let Some(total) = len.checked_add(align) else {
        return ptr::null_mut();
    };
    let raw = map(total);
    if raw.is_null() {
        return raw;
    }
    let start = raw as usize;
    let aligned = start.next_multiple_of(align);
    // SAFETY: both ranges lie inside the mapping just made.
    unsafe {
        if aligned > start {
            libc::munmap(raw.cast(), aligned - start);
        }
        let tail = start + total - (aligned + len);
        if tail > 0 {
            libc::munmap((aligned + len) as *mut libc::c_void, tail);
        }
    }
    aligned as *mut u8
}

impl State {
    fn take(&mut self, class: usize) -> *mut u8 {
        let head = self.free[class];
        if !head.is_null() {
            // SAFETY: every list entry is a freed block of this class, at
            // least 16 bytes, whose first word was written by `give`.
            self.free[class] = unsafe { head.cast::<*mut u8>().read() };
            return head;
        }
        self.carve(class)
    }

    /// A block never handed out before, from the current arena or a new one.
    #[cold]
    #[inline(never)]
    fn carve(&mut self, class: usize) -> *mut u8 {
        let (size, align) = (class_size(class), class_align(class));
        let mut start = self.next.next_multiple_of(align);
        if start + size > self.end {
            let arena = map(ARENA);
            if arena.is_null() {
                return arena;
            }
            // The rest of the old arena is abandoned: at most one block of
            // the largest class per MiB.
            self.next = arena as usize;
            self.end = self.next + ARENA;
            start = self.next.next_multiple_of(align);
        }
        self.next = start + size;
        start as *mut u8
    }

    fn give(&mut self, class: usize, block: *mut u8) {
        // SAFETY: the block is ours, aligned and at least one word long.
        unsafe { block.cast::<*mut u8>().write(self.free[class]) };
        self.free[class] = block;
    }
}

// The methods are not inlined: with LTO they would otherwise be copied into
// every allocation site (+40 KB of code).
unsafe impl GlobalAlloc for SizeClassAlloc {
    #[inline(never)]
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        match route(layout) {
            Route::Class(class) => HEAP.with(|s| s.take(class)),
            Route::Mapped(len) => map_aligned(len, layout.align()),
        }
    }

    #[inline(never)]
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        match route(layout) {
            Route::Class(class) => {
                let p = HEAP.with(|s| s.take(class));
                if !p.is_null() {
                    // SAFETY: the block holds at least `layout.size()` bytes.
                    unsafe { ptr::write_bytes(p, 0, layout.size()) };
                }
                p
            }
            // Fresh anonymous pages are zero.
            Route::Mapped(len) => map_aligned(len, layout.align()),
        }
    }

    #[inline(never)]
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        match route(layout) {
            Route::Class(class) => HEAP.with(|s| s.give(class, ptr)),
            // SAFETY: `ptr` is the start of a mapping of exactly `len` bytes.
            Route::Mapped(len) => unsafe {
                libc::munmap(ptr.cast(), len);
            },
        }
    }

    #[inline(never)]
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller guarantees the new layout is valid.
        let new_layout = unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) };
        match (route(layout), route(new_layout)) {
            (old, new) if old == new => return ptr,
            (Route::Mapped(old), Route::Mapped(new)) if layout.align() <= PAGE => {
                // SAFETY: `ptr` starts a mapping of `old` bytes.
                let p = unsafe { libc::mremap(ptr.cast(), old, new, libc::MREMAP_MAYMOVE) };
                return if p == libc::MAP_FAILED {
                    ptr::null_mut()
                } else {
                    p.cast()
                };
            }
            _ => {}
        }
        // SAFETY: as for `alloc`; the copy stays within both blocks.
        unsafe {
            let fresh = self.alloc(new_layout);
            if !fresh.is_null() {
                ptr::copy_nonoverlapping(ptr, fresh, layout.size().min(new_size));
                self.dealloc(ptr, layout);
            }
            fresh
        }
    }
}

#[cfg(test)]
mod tests;
