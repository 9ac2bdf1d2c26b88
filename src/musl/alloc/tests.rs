//! Unit tests of the size-class allocator: the class table, routing, and
//! real allocations (alignment, disjointness, reuse, zeroing, realloc across
//! every route, several threads).

use super::*;

#[test]
fn every_size_gets_the_smallest_class_that_holds_it() {
    for size in 1..=SMALL_MAX {
        let class = class_of(size);
        assert!(class < CLASSES, "size {size}: class {class}");
        assert!(
            class_size(class) >= size,
            "size {size}: class {class} holds {}",
            class_size(class)
        );
        if class > 0 {
            assert!(
                class_size(class - 1) < size,
                "size {size} would fit class {}",
                class - 1
            );
        }
    }
    assert_eq!(class_size(CLASSES - 1), SMALL_MAX);
}

#[test]
fn classes_grow_and_keep_sixteen_byte_alignment() {
    let sizes: Vec<usize> = (0..CLASSES).map(class_size).collect();
    assert_eq!(
        &sizes[..12],
        &[16, 32, 48, 64, 80, 96, 112, 128, 160, 192, 224, 256]
    );
    for pair in sizes.windows(2) {
        assert!(pair[0] < pair[1], "{sizes:?}");
    }
    for size in sizes {
        assert_eq!(size % MIN_ALIGN, 0, "{size}");
    }
    // Waste is bounded: a block is at most 25 % larger than the request
    // above 128 bytes.
    for size in 129..=SMALL_MAX {
        assert!(class_size(class_of(size)) * 4 <= size * 5 + 4, "{size}");
    }
}

#[test]
fn routes() {
    let l = |size, align| Layout::from_size_align(size, align).unwrap();
    assert_eq!(route(l(1, 1)), Route::Class(0));
    assert_eq!(route(l(0, 1)), Route::Class(0));
    assert_eq!(route(l(24, 8)), Route::Class(1));
    assert_eq!(route(l(SMALL_MAX, 16)), Route::Class(CLASSES - 1));
    assert_eq!(route(l(SMALL_MAX + 1, 16)), Route::Mapped(SMALL_MAX + PAGE));
    // Over-aligned: the power-of-two class at least as large as both.
    assert_eq!(route(l(40, 64)), Route::Class(class_of(64)));
    assert_eq!(route(l(100, 4096)), Route::Class(class_of(4096)));
    assert_eq!(route(l(5000, 4096)), Route::Class(class_of(8192)));
    assert_eq!(route(l(100, 8192)), Route::Mapped(PAGE));
    assert_eq!(route(l(SMALL_MAX, 32)), Route::Class(CLASSES - 1));
    assert_eq!(route(l(SMALL_MAX + 1, 32)), Route::Mapped(SMALL_MAX + PAGE));
}

/// Fills a block with a pattern derived from its address and size, so an
/// overlap between two live blocks shows up when either is checked.
fn fill(p: *mut u8, size: usize, seed: u8) {
    for i in 0..size {
        unsafe { p.add(i).write(seed.wrapping_add(i as u8)) };
    }
}

fn check(p: *const u8, size: usize, seed: u8) {
    for i in 0..size {
        let got = unsafe { p.add(i).read() };
        assert_eq!(
            got,
            seed.wrapping_add(i as u8),
            "byte {i} of a {size}-byte block"
        );
    }
}

#[test]
fn blocks_are_aligned_disjoint_and_reused() {
    let a = SizeClassAlloc;
    let mut live = Vec::new();
    let mut seed = 0u8;
    for &(size, align) in &[
        (1, 1),
        (7, 4),
        (16, 16),
        (100, 8),
        (129, 8),
        (1000, 64),
        (4000, 4096),
        (5000, 4096),
        (40_000, 8),
        (SMALL_MAX, 16),
        (SMALL_MAX + 1, 16),
        (300_000, 8),
        (10_000, 16_384),
        (200_000, 65_536),
    ] {
        for _ in 0..3 {
            let layout = Layout::from_size_align(size, align).unwrap();
            let p = unsafe { a.alloc(layout) };
            assert!(!p.is_null(), "{layout:?}");
            assert_eq!(p as usize % align, 0, "{layout:?} at {p:?}");
            seed = seed.wrapping_add(37);
            fill(p, size, seed);
            live.push((p, layout, seed));
        }
    }
    for &(p, layout, seed) in &live {
        check(p, layout.size(), seed);
    }
    for (p, layout, seed) in live {
        check(p, layout.size(), seed);
        unsafe { a.dealloc(p, layout) };
    }
}

#[test]
fn freed_blocks_are_reused_last_in_first_out() {
    // A private heap: the global one is shared with the other tests.
    let mut state = State {
        free: [ptr::null_mut(); CLASSES],
        next: 0,
        end: 0,
    };
    let class = class_of(100);
    let first = state.take(class);
    let second = state.take(class);
    assert_eq!(second as usize - first as usize, class_size(class));
    state.give(class, first);
    state.give(class, second);
    assert_eq!(state.take(class), second);
    assert_eq!(state.take(class), first);
    assert_eq!(
        state.take(class) as usize,
        second as usize + class_size(class)
    );
    // Power-of-two classes are carved at addresses aligned to their size.
    let page = state.take(class_of(4096));
    assert_eq!(page as usize % 4096, 0);
    let pow = state.take(class_of(512));
    assert_eq!(pow as usize % 512, 0);
}

#[test]
fn zeroed_blocks_are_zero_even_when_reused() {
    let a = SizeClassAlloc;
    for size in [8, 200, 3000, SMALL_MAX, SMALL_MAX * 3] {
        let layout = Layout::from_size_align(size, 8).unwrap();
        let p = unsafe { a.alloc(layout) };
        fill(p, size, 1);
        unsafe { a.dealloc(p, layout) };
        let q = unsafe { a.alloc_zeroed(layout) };
        assert!((0..size).all(|i| unsafe { q.add(i).read() } == 0), "{size}");
        unsafe { a.dealloc(q, layout) };
    }
}

#[test]
fn realloc_keeps_contents_across_every_route() {
    let a = SizeClassAlloc;
    // Grow a buffer from one byte to 1 MiB, through classes, across the
    // class/mapping boundary and through mremap, then shrink it back.
    let mut size = 1;
    let mut layout = Layout::from_size_align(size, 8).unwrap();
    let mut p = unsafe { a.alloc(layout) };
    fill(p, size, 9);
    let mut steps: Vec<usize> = Vec::new();
    let mut s = 1;
    while s < (1 << 20) {
        s = s * 3 / 2 + 1;
        steps.push(s);
    }
    steps.extend(steps.clone().into_iter().rev().skip(1));
    steps.push(1);
    for new_size in steps {
        let q = unsafe { a.realloc(p, layout, new_size) };
        assert!(!q.is_null());
        check(q, size.min(new_size), 9);
        fill(q, new_size, 9);
        p = q;
        size = new_size;
        layout = Layout::from_size_align(size, 8).unwrap();
    }
    unsafe { a.dealloc(p, layout) };
}

#[test]
fn several_threads_at_once() {
    let handles: Vec<_> = (0..4u8)
        .map(|t| {
            std::thread::spawn(move || {
                let a = SizeClassAlloc;
                let mut live = Vec::new();
                for i in 0..20_000usize {
                    let size = 1 + (i * 7919 + t as usize * 104_729) % 3000;
                    let layout = Layout::from_size_align(size, 8).unwrap();
                    let p = unsafe { a.alloc(layout) };
                    let seed = (i as u8).wrapping_mul(t + 1);
                    fill(p, size.min(64), seed);
                    live.push((p, layout, seed));
                    if i % 3 == 0 {
                        let (p, layout, seed) = live.swap_remove(i % live.len());
                        check(p, layout.size().min(64), seed);
                        unsafe { a.dealloc(p, layout) };
                    }
                }
                for (p, layout, seed) in live {
                    check(p, layout.size().min(64), seed);
                    unsafe { a.dealloc(p, layout) };
                }
            })
        })
        .collect();
    for handle in handles {
        handle.join().unwrap();
    }
}

/// Random allocations, reallocations and frees of mixed sizes and
/// alignments, every block's contents checked before it is released: a
/// block handed out twice, or a copy that loses bytes, shows up here.
#[test]
fn random_workload_keeps_every_block_intact() {
    // Bytes filled and checked per block: all of any small block.
    const CHECKED: usize = 16 * 1024;
    let a = SizeClassAlloc;
    let mut state = 0x9E37_79B9_7F4A_7C15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut live: Vec<(*mut u8, Layout, u8)> = Vec::new();
    for step in 0..60_000u32 {
        let r = next();
        let size = match r % 100 {
            0..=69 => 1 + (r >> 8) as usize % 128,
            70..=94 => 1 + (r >> 8) as usize % 8192,
            95..=98 => 1 + (r >> 8) as usize % (3 * SMALL_MAX),
            _ => 1 + (r >> 8) as usize % (1 << 20),
        };
        let align = match (r >> 40) % 16 {
            0 => 64,
            1 => 4096,
            2 => 16_384,
            _ => 8,
        };
        let action = (r >> 50) % 4;
        if live.is_empty() || action < 2 {
            let layout = Layout::from_size_align(size, align).unwrap();
            let p = unsafe { a.alloc(layout) };
            assert!(!p.is_null());
            assert_eq!(p as usize % align, 0, "{layout:?}");
            let seed = step as u8;
            fill(p, size.min(CHECKED), seed);
            live.push((p, layout, seed));
        } else {
            let i = (r >> 20) as usize % live.len();
            let (p, layout, seed) = live.swap_remove(i);
            check(p, layout.size().min(CHECKED), seed);
            if action == 2 {
                let q = unsafe { a.realloc(p, layout, size) };
                assert!(!q.is_null());
                assert_eq!(q as usize % layout.align(), 0);
                check(q, layout.size().min(size).min(CHECKED), seed);
                let layout = Layout::from_size_align(size, layout.align()).unwrap();
                fill(q, size.min(CHECKED), seed);
                live.push((q, layout, seed));
            } else {
                unsafe { a.dealloc(p, layout) };
            }
        }
    }
    for (p, layout, seed) in live {
        check(p, layout.size().min(CHECKED), seed);
        unsafe { a.dealloc(p, layout) };
    }
}
