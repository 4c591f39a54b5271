//! The order in which progressive filling ([`crate::max_min_fair`]) reaches resources: each
//! resource's level as one integer key, and a queue of keys that reads the first keys sorted
//! and keeps a heap only for the keys put back.

use std::cmp::Reverse;

use std::collections::BinaryHeap;

/// A resource's place in the filling order as one integer: its level's bits mapped so that
/// unsigned order is `f64::total_cmp`'s order, then the resource index (the lowest first among
/// ties). The smallest key is the next to fill.
pub(crate) fn level_key(level: f64, e: u32) -> u128 {
    let bits = level.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    (u128::from(ordered) << 32) | u128::from(e)
}

/// The level a [`level_key`] holds.
pub(crate) fn key_level(key: u128) -> f64 {
    let ordered = (key >> 32) as u64;
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    f64::from_bits(bits)
}

/// Resources in filling order ([`level_key`], smallest first): the first keys of all of them,
/// sorted once and read in order, and a heap for the keys of resources put back at a higher
/// level. The smaller of the two heads is the next; as every key is distinct (a key put back
/// is above the one taken), the order is the one a single heap of all keys would give, and a
/// resource whose flows all froze before its turn costs a step of the cursor, not a heap pop.
#[derive(Clone, Debug, Default)]
pub(crate) struct LevelQueue {
    sorted: Vec<u128>,
    next: usize,
    again: BinaryHeap<Reverse<u128>>,
}

impl LevelQueue {
    /// Empty the queue and fill it with `keys`.
    pub(crate) fn refill(&mut self, keys: impl Iterator<Item = u128>) {
        self.sorted.clear();
        self.sorted.extend(keys);
        self.sorted.sort_unstable();
        self.next = 0;
        self.again.clear();
    }

    /// The smallest key, if any.
    pub(crate) fn peek(&self) -> Option<u128> {
        match (self.sorted.get(self.next), self.again.peek()) {
            (Some(&a), Some(b)) => Some(a.min(b.0)),
            (Some(&a), None) => Some(a),
            (None, b) => b.map(|b| b.0),
        }
    }

    /// Take the smallest key.
    pub(crate) fn pop(&mut self) -> Option<u128> {
        let from_sorted = self
            .sorted
            .get(self.next)
            .is_some_and(|&a| self.again.peek().is_none_or(|b| a < b.0));
        if from_sorted {
            self.next += 1;
            Some(self.sorted[self.next - 1])
        } else {
            self.again.pop().map(|b| b.0)
        }
    }

    /// Put a key back.
    pub(crate) fn push(&mut self, key: u128) {
        self.again.push(Reverse(key));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// The heap's integer key orders levels as `f64::total_cmp` does, then resources by
        /// index, and gives the level back bit for bit.
        #[test]
        fn level_key_orders_as_total_cmp(
            a in any::<f64>(),
            b in any::<f64>(),
            i in any::<u32>(),
            j in any::<u32>(),
        ) {
            let expected = a.total_cmp(&b).then(i.cmp(&j));
            prop_assert_eq!(level_key(a, i).cmp(&level_key(b, j)), expected);
            prop_assert_eq!(key_level(level_key(a, i)).to_bits(), a.to_bits());
            prop_assert_eq!(level_key(a, i) as u32, i);
        }

        /// Keys come out smallest first, whether taken from the sorted first keys or put back
        /// (a key put back is above the one taken, as in the filling).
        #[test]
        fn queue_gives_keys_in_order(
            first in proptest::collection::btree_set(0u128..1000, 0..60),
            again in proptest::collection::vec(1u128..50, 0..60),
        ) {
            let mut queue = LevelQueue::default();
            queue.refill(first.iter().rev().copied());
            let mut all: Vec<u128> = first.iter().copied().collect();
            let mut out = Vec::new();
            let mut again = again.into_iter();
            while let Some(key) = queue.pop() {
                out.push(key);
                if let Some(step) = again.next() {
                    // Put back at a higher key no other holds.
                    let back = key + step * 1000;
                    if !all.contains(&back) {
                        all.push(back);
                        queue.push(back);
                    }
                }
                prop_assert!(queue.peek().is_none_or(|next| next > key));
            }
            all.sort_unstable();
            prop_assert_eq!(out, all);
        }
    }
}
