//! Independent runs on a thread pool the caller sizes: results in input order whatever the
//! completion order, and at most that many runs at once (so at most that many hold their
//! state). The pool is built here for the call, never rayon's global one, so a library user's
//! own pool configuration is untouched; the core crates know no threads.

use rayon::prelude::*;

/// The number of threads `-j` means when not given: every core the process may use (1 when
/// the platform cannot say).
pub fn all_cores() -> usize {
    std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get)
}

/// The threads `-j N` asks for, every core ([`all_cores`]) when not given.
pub fn threads_or_all_cores(asked: Option<u16>) -> usize {
    asked.map_or_else(all_cores, usize::from)
}

/// The command line as recorded in a result, without `-j N`/`--jobs N` (also `-jN`,
/// `--jobs=N`): how many runs went at once changes no byte of the result, so it is no part of
/// how to reproduce it, and outputs made with different `-j` stay identical.
pub fn without_threads_flag(words: Vec<String>) -> Vec<String> {
    let mut out = Vec::with_capacity(words.len());
    let mut words = words.into_iter();
    while let Some(w) = words.next() {
        if w == "-j" || w == "--jobs" {
            words.next();
        } else if !(w.starts_with("--jobs=")
            || (w.starts_with("-j") && w[2..].parse::<u16>().is_ok()))
        {
            out.push(w);
        }
    }
    out
}

/// `f(index, item)` for every item, on at most `threads` threads at once, in input order.
/// `threads` ≤ 1, or one item, runs on the calling thread. When the operating system refuses
/// the threads, the items run on the calling thread: the same results, later.
pub fn map_in_order<T, R, F>(threads: usize, items: &[T], f: F) -> Vec<R>
where
    T: Sync,
    R: Send,
    F: Fn(usize, &T) -> R + Sync,
{
    let threads = threads.min(items.len());
    let serial = || items.iter().enumerate().map(|(i, t)| f(i, t)).collect();
    if threads <= 1 {
        return serial();
    }
    match rayon::ThreadPoolBuilder::new().num_threads(threads).build() {
        // One item per task: a thread holds one run at a time; `collect` on an indexed
        // iterator writes each result at its input position.
        Ok(pool) => pool.install(|| {
            items
                .par_iter()
                .with_max_len(1)
                .enumerate()
                .map(|(i, t)| f(i, t))
                .collect()
        }),
        Err(_) => serial(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn results_come_in_input_order_whatever_finishes_first() {
        let items: Vec<u64> = (0..16).collect();
        // Early items sleep longest, so they finish last on several threads.
        let out = map_in_order(4, &items, |i, &x| {
            std::thread::sleep(std::time::Duration::from_millis(16 - x));
            (i, x * x)
        });
        let expected: Vec<(usize, u64)> = (0..16).map(|x| (x as usize, x * x)).collect();
        assert_eq!(out, expected);
    }

    #[test]
    fn never_more_than_the_threads_asked_run_at_once() {
        let running = AtomicUsize::new(0);
        let peak = AtomicUsize::new(0);
        let items = vec![(); 24];
        map_in_order(3, &items, |_, _| {
            let now = running.fetch_add(1, Ordering::SeqCst) + 1;
            peak.fetch_max(now, Ordering::SeqCst);
            std::thread::sleep(std::time::Duration::from_millis(5));
            running.fetch_sub(1, Ordering::SeqCst);
        });
        let peak = peak.load(Ordering::SeqCst);
        assert!(peak <= 3, "{peak} runs at once with 3 threads");
        assert!(
            peak >= 2,
            "the runs never overlapped ({peak}): no pool was used"
        );
    }

    #[test]
    fn the_threads_flag_leaves_the_recorded_command_line() {
        let words = |s: &str| s.split(' ').map(str::to_owned).collect::<Vec<_>>();
        for typed in [
            "railyard -j 3 simulate --seed 2",
            "railyard simulate --jobs 3 --seed 2",
            "railyard simulate -j3 --seed 2",
            "railyard simulate --seed 2 --jobs=3",
        ] {
            assert_eq!(
                without_threads_flag(words(typed)),
                words("railyard simulate --seed 2"),
                "{typed}"
            );
        }
        // Not the flag: a value that merely starts with -j, a trace named -jx.
        let kept = words("railyard simulate --trace -jx");
        assert_eq!(without_threads_flag(kept.clone()), kept);
    }

    #[test]
    fn one_thread_runs_on_the_caller() {
        let caller = std::thread::current().id();
        let items = vec![(); 4];
        let ids = map_in_order(1, &items, |_, _| std::thread::current().id());
        assert!(ids.iter().all(|&id| id == caller));
    }
}
