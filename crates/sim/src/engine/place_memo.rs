//! What the scheduling pass knows about placing each placement class in the current state
//! ([`PlaceMemo`]): a class that failed to place fails again until the next start, stop or node
//! change. Plain counters; it knows nothing of the scheduler.

/// What the engine knows about placing each class ([`State::class`]) in the current state, the
/// state being named by [`State::changes`] (every start, stop and node change bumps it): a
/// class whose placement failed, or whose jobs asked more GPUs than were free, fails again
/// until something changes, whatever job of the class asks. Also counts the classes with
/// pending jobs, so a pass knows when no pending job can start.
#[derive(Default)]
pub(super) struct PlaceMemo {
    /// Per class, `changes + 1` when its placement last failed (0: never).
    pub(super) failed: Vec<u64>,
    /// Per class, `changes + 1` when its jobs last asked more GPUs than were free.
    pub(super) short: Vec<u64>,
    /// Per class, its pending jobs.
    pub(super) pending: Vec<u32>,
    /// Classes with pending jobs.
    pub(super) live: usize,
    /// Of those, how many are known not to start in state `epoch`.
    pub(super) known_live: usize,
    pub(super) epoch: u64,
}

impl PlaceMemo {
    pub(super) fn new(classes: usize) -> Self {
        PlaceMemo {
            failed: vec![0; classes],
            short: vec![0; classes],
            pending: vec![0; classes],
            ..PlaceMemo::default()
        }
    }

    /// Whether jobs of class `c` are known not to start in state `changes`.
    pub(super) fn known(&self, c: usize, changes: u64) -> bool {
        self.failed[c] == changes + 1 || self.short[c] == changes + 1
    }

    /// Class `c` did not start in state `changes`: its placement failed (`short` false) or it
    /// asked more GPUs than were free.
    pub(super) fn note(&mut self, c: usize, changes: u64, short: bool) {
        let was_known = self.known(c, changes);
        if short {
            self.short[c] = changes + 1;
        } else {
            self.failed[c] = changes + 1;
        }
        if !was_known {
            if self.epoch != changes {
                self.epoch = changes;
                self.known_live = 0;
            }
            if self.pending[c] > 0 {
                self.known_live += 1;
            }
        }
    }

    /// A job of class `c` joins (`add`) or leaves the pending list.
    pub(super) fn pending_change(&mut self, c: usize, changes: u64, add: bool) {
        let counted = self.epoch == changes && self.known(c, changes);
        if add {
            self.pending[c] += 1;
            if self.pending[c] == 1 {
                self.live += 1;
                self.known_live += usize::from(counted);
            }
        } else {
            self.pending[c] -= 1;
            if self.pending[c] == 0 {
                self.live -= 1;
                self.known_live -= usize::from(counted);
            }
        }
    }

    /// Whether every pending job is known not to start in state `changes`.
    pub(super) fn none_starts(&self, changes: u64) -> bool {
        self.epoch == changes && self.known_live == self.live
    }
}

#[cfg(test)]
mod tests {
    use super::PlaceMemo;

    /// The memo's count of classes known not to start, against a recount from scratch, over
    /// a seeded mix of failures, GPU shortfalls, jobs joining and leaving and state changes.
    #[test]
    fn place_memo_counts_like_a_recount() {
        let classes = 5;
        let mut memo = PlaceMemo::new(classes);
        let mut pending = vec![0u32; classes];
        let mut changes = 0u64;
        let mut seed = 0x2545_f491_4f6c_dd1d_u64;
        let mut next = |n: u64| {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed % n
        };
        let mut both_outcomes = [false; 2];
        for _ in 0..20_000 {
            let c = next(classes as u64) as usize;
            match next(5) {
                0 => changes += 1,
                1 => memo.note(c, changes, false),
                2 => memo.note(c, changes, true),
                3 => {
                    pending[c] += 1;
                    memo.pending_change(c, changes, true);
                }
                _ if pending[c] > 0 => {
                    pending[c] -= 1;
                    memo.pending_change(c, changes, false);
                }
                _ => {}
            }
            let live: Vec<usize> = (0..classes).filter(|&k| pending[k] > 0).collect();
            let want = live.iter().all(|&k| memo.known(k, changes))
                && (!live.is_empty() || memo.epoch == changes);
            assert_eq!(memo.none_starts(changes), want, "after {changes} changes");
            both_outcomes[usize::from(want)] = true;
        }
        assert_eq!(both_outcomes, [true, true]);
    }
}
