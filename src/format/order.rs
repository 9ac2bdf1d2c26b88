//! Sorting by a number with one sort for the whole program.
//!
//! Every `sort`, `sort_by_key` or `sort_unstable` on another element type
//! compiles a sort of its own (3 to 7 KB of code each); [`order_by`] sorts
//! `(key, position)` pairs instead, the same instantiation for every
//! caller. For lists that are not hot: it allocates the pairs.
//!
//! Architecture Invariant: pure; no I/O.

/// The positions of `items` in ascending order of `key`; items with equal
/// keys keep their order (a stable sort).
pub fn order_by<T>(items: &[T], key: impl Fn(&T) -> u64) -> Vec<usize> {
    let mut pairs: Vec<(u64, usize)> = items
        .iter()
        .enumerate()
        .map(|(i, item)| (key(item), i))
        .collect();
    pairs.sort_unstable();
    pairs.into_iter().map(|(_, i)| i).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn orders_by_key_and_keeps_ties_in_place() {
        let items = [(3, 'a'), (1, 'b'), (3, 'c'), (0, 'd'), (1, 'e')];
        let order = order_by(&items, |(k, _)| *k);
        let names: String = order.iter().map(|&i| items[i].1).collect();
        assert_eq!(names, "dbeac");
        assert!(order_by(&[] as &[u8], |_| 0).is_empty());
    }

    #[test]
    fn matches_a_stable_sort_on_many_lists() {
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for len in 0..200 {
            let items: Vec<(u64, usize)> = (0..len)
                .map(|i| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state % 8, i)
                })
                .collect();
            let mut expected = items.clone();
            expected.sort_by_key(|(k, _)| *k);
            let got: Vec<_> = order_by(&items, |(k, _)| *k)
                .iter()
                .map(|&i| items[i])
                .collect();
            assert_eq!(got, expected);
        }
    }
}
