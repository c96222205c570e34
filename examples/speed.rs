//! Scans a file with the default rules and prints the throughput: a quick check of the core's
//! speed (`cargo run --release --example speed FILE [RUNS]`: the median of RUNS scans in one
//! process, 1 by default, the count for valgrind). The benches in benches/ are the reference.
use std::time::Instant;

fn main() {
    let mut args = std::env::args().skip(1);
    let path = args.next().expect("usage: speed FILE [RUNS]");
    let runs: usize = args.next().map_or(1, |runs| runs.parse().expect("RUNS is a count"));
    let text = std::fs::read_to_string(path).expect("a UTF-8 file");
    let rules = loopbreak::DEFAULT_RULES;
    let mut rates = Vec::with_capacity(runs);
    let mut findings = 0;
    for _ in 0..runs.max(1) {
        let started = Instant::now();
        findings = loopbreak::scan_str(&text, &rules).len();
        rates.push(text.len() as f64 / started.elapsed().as_secs_f64() / 1e6);
    }
    rates.sort_by(f64::total_cmp);
    println!(
        "{} bytes, {findings} findings, {:.1} MB/s (median of {})",
        text.len(),
        rates[rates.len() / 2],
        rates.len()
    );
}
