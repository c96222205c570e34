//! Scanning many texts at once on all cores (or a given number of threads).

use std::sync::{Arc, Mutex, PoisonError};

use rayon::prelude::*;
use rayon::{ThreadPool, ThreadPoolBuilder};

use crate::detector::scan_str;
use crate::finding::Finding;
use crate::rules::Rules;

/// The findings of every text, in order, scanned in parallel. `threads` of `None` uses rayon's
/// global pool (one thread per core).
pub fn scan_many(texts: &[&str], rules: &Rules, threads: Option<usize>) -> Vec<Vec<Finding>> {
    map_parallel(texts, |text| scan_str(text, rules), threads)
}

/// `scan` applied to every item in parallel, results in order. More threads than cores are
/// no faster for this work, so `threads` is capped at the number of cores.
pub fn map_parallel<T: Sync>(
    items: &[T],
    scan: impl Fn(&T) -> Vec<Finding> + Sync,
    threads: Option<usize>,
) -> Vec<Vec<Finding>> {
    let run = || items.par_iter().map(&scan).collect();
    match threads {
        None => run(),
        Some(n) => match pool(n.min(cores())) {
            Some(pool) => pool.install(run),
            // A pool that cannot start (no threads left) still gets the work done, serially.
            None => items.iter().map(&scan).collect(),
        },
    }
}

/// The pool of `n` threads, started on first use and kept for every later call with as many
/// (a server passing `threads` on every batch would otherwise start `n` threads per batch). At
/// most one pool per count up to the number of cores is ever kept.
fn pool(n: usize) -> Option<Arc<ThreadPool>> {
    static POOLS: Mutex<Vec<(usize, Arc<ThreadPool>)>> = Mutex::new(Vec::new());
    // A panic while the list was held left it whole: nothing is half-pushed.
    let mut pools = POOLS.lock().unwrap_or_else(PoisonError::into_inner);
    if let Some((_, pool)) = pools.iter().find(|(threads, _)| *threads == n) {
        return Some(Arc::clone(pool));
    }
    let pool = Arc::new(ThreadPoolBuilder::new().num_threads(n).build().ok()?);
    pools.push((n, Arc::clone(&pool)));
    Some(pool)
}

fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;
    use std::sync::Mutex;
    use std::thread::ThreadId;

    use super::*;
    use crate::DEFAULT_RULES;

    #[test]
    fn same_findings_as_one_by_one_whatever_the_threads() {
        let owned: Vec<String> = (0..50).map(|i| format!("text {i}: {}", "loop ".repeat(i * 3))).collect();
        let texts: Vec<&str> = owned.iter().map(String::as_str).collect();
        let expected: Vec<Vec<Finding>> = texts.iter().map(|t| scan_str(t, &DEFAULT_RULES)).collect();
        assert!(expected.iter().any(|f| !f.is_empty()) && expected.iter().any(Vec::is_empty));
        for threads in [None, Some(1), Some(2)] {
            assert_eq!(scan_many(&texts, &DEFAULT_RULES, threads), expected);
        }
    }

    /// A call with `threads` runs on a pool of threads kept for the next call with as many:
    /// repeated calls start no new threads.
    #[test]
    fn calls_with_the_same_threads_reuse_their_threads() {
        let items: Vec<u32> = (0..64).collect();
        for threads in [1, 2] {
            let seen: Mutex<HashSet<ThreadId>> = Mutex::default();
            for _ in 0..5 {
                map_parallel(
                    &items,
                    |_| {
                        seen.lock().unwrap().insert(std::thread::current().id());
                        Vec::new()
                    },
                    Some(threads),
                );
            }
            let seen = seen.into_inner().unwrap();
            assert!(seen.len() <= threads.min(cores()), "{} threads ran 5 calls with threads={threads}", seen.len());
        }
    }
}
