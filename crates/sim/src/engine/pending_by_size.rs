//! The pending jobs by size group, for the lowest-numbered of each ([`PendingBySize`]): what the
//! fragmentation measure tries after a pass. Plain heaps; it knows nothing of the scheduler.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

/// The pending jobs per size group (`(GPUs, held GPUs)`, ascending), for the lowest-numbered
/// of each: a min-heap per group whose entries for jobs no longer pending are dropped when they
/// reach its top (so a job joining or leaving allocates nothing), and each group's count.
pub(super) struct PendingBySize {
    heaps: Vec<BinaryHeap<Reverse<usize>>>,
    count: Vec<u32>,
    is_pending: Vec<bool>,
}

impl PendingBySize {
    pub(super) fn new(groups: usize, jobs: usize) -> Self {
        PendingBySize {
            heaps: vec![BinaryHeap::new(); groups],
            count: vec![0; groups],
            is_pending: vec![false; jobs],
        }
    }

    /// Job `i` of group `g` joins.
    pub(super) fn add(&mut self, g: usize, i: usize) {
        self.heaps[g].push(Reverse(i));
        self.count[g] += 1;
        self.is_pending[i] = true;
    }

    /// Job `i` of group `g` leaves.
    pub(super) fn remove(&mut self, g: usize, i: usize) {
        self.count[g] -= 1;
        self.is_pending[i] = false;
        if self.count[g] == 0 {
            self.heaps[g].clear();
        }
    }

    /// The lowest-numbered pending job of each of the first `n` groups that have one.
    pub(super) fn smallest(&mut self, n: usize) -> Vec<usize> {
        let mut out = Vec::with_capacity(n);
        for (heap, &count) in self.heaps.iter_mut().zip(&self.count) {
            if out.len() == n {
                break;
            }
            if count == 0 {
                continue;
            }
            while let Some(&Reverse(i)) = heap.peek() {
                if self.is_pending[i] {
                    out.push(i);
                    break;
                }
                heap.pop();
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::PendingBySize;

    /// The lowest-numbered pending job of the first groups, against a recount from scratch,
    /// over a seeded mix of jobs joining and leaving (and joining again).
    #[test]
    fn pending_by_size_finds_the_lowest_numbered_job_like_a_scan() {
        let (groups, jobs) = (6, 40);
        let group_of = |i: usize| (i * 7 + i / 3) % groups;
        let mut by_size = PendingBySize::new(groups, jobs);
        let mut pending = vec![false; jobs];
        let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
        for step in 0..20_000 {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            let i = (seed % jobs as u64) as usize;
            if pending[i] {
                by_size.remove(group_of(i), i);
            } else {
                by_size.add(group_of(i), i);
            }
            pending[i] = !pending[i];
            let n = 1 + step % 4;
            let want: Vec<usize> = (0..groups)
                .filter_map(|g| (0..jobs).find(|&j| pending[j] && group_of(j) == g))
                .take(n)
                .collect();
            assert_eq!(by_size.smallest(n), want, "step {step}");
        }
    }
}
