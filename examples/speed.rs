//! Scans a file with the default rules and prints the throughput: a quick check of the core's
//! speed (`cargo run --release --example speed FILE`). The benches in benches/ are the reference.
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: speed FILE");
    let text = std::fs::read_to_string(path).expect("a UTF-8 file");
    let rules = loopbreak::DEFAULT_RULES;
    let started = Instant::now();
    let findings = loopbreak::scan_str(&text, &rules);
    let seconds = started.elapsed().as_secs_f64();
    println!("{} bytes, {} findings, {:.1} MB/s", text.len(), findings.len(), text.len() as f64 / seconds / 1e6);
}
