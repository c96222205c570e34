//! Criterion benches of the core: `Detector` fed 2 KB chunks and 4-char deltas, `scan_str`, and a
//! plain byte-summing pass as the ceiling to compare with, on clean text (the running Python's
//! standard library) and on degenerate text (the real loop excerpts in ../shared/corpus/loops,
//! and a synthetic copy of the `loadTools.` incident).
//!
//! Run with `cargo bench --bench core`. The clean corpus is chosen exactly as in
//! benches/corpus.py, so the Rust and Python numbers are measured on the same text.

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::process::Command;

use criterion::{criterion_group, criterion_main, BatchSize, BenchmarkId, Criterion, Throughput};
use loopbreak::{scan_str, Detector, DEFAULT_RULES};

/// How much of the standard library the clean corpus holds: enough that one pass takes
/// milliseconds, small enough to load in well under a second.
const CLEAN_BUDGET: usize = 4_000_000;
const SUFFIXES: [&str; 3] = ["py", "rst", "txt"];
/// Installed packages vary from machine to machine; bytecode caches are not text.
const SKIP_DIRS: [&str; 2] = ["site-packages", "__pycache__"];
/// The synthetic incident: some prose, then the loop the README opens with (`loadTools.`).
const INCIDENT_PROSE: &str = "The test suite passes and the build is green. Before I write the \
summary, I will check which tools are still available to me on this final step, so that the \
report lists every change I made and the reasons for it.\n\n";
const INCIDENT_LOOP: &str = "loadTools.";
const INCIDENT_REPEATS: usize = 20_000;

fn stdlib_dir() -> PathBuf {
    let python = std::env::var("PYTHON").unwrap_or_else(|_| "python3".into());
    let out = Command::new(&python)
        .args(["-c", "import sysconfig; print(sysconfig.get_paths()['stdlib'])"])
        .output()
        .unwrap_or_else(|e| panic!("the clean corpus needs Python ({python}): {e}"));
    assert!(out.status.success(), "{python} could not report its stdlib directory");
    PathBuf::from(String::from_utf8(out.stdout).expect("a UTF-8 path").trim())
}

/// Regular text files under `dir`, as (path relative to `root` with `/` separators, path).
fn walk(root: &Path, dir: &Path, found: &mut Vec<(String, PathBuf)>) {
    for entry in std::fs::read_dir(dir).expect("a readable stdlib directory") {
        let entry = entry.expect("a readable directory entry");
        let kind = entry.file_type().expect("a file type");
        let path = entry.path();
        let name = entry.file_name();
        if kind.is_dir() && !SKIP_DIRS.iter().any(|d| name == *d) {
            walk(root, &path, found);
        } else if kind.is_file() && path.extension().is_some_and(|e| SUFFIXES.iter().any(|s| e == *s)) {
            let rel: Vec<String> = path
                .strip_prefix(root)
                .expect("under the root")
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            found.push((rel.join("/"), path));
        }
    }
}

/// Every `step`-th file of the sorted list, so the sample spans the whole library (code, docs,
/// tests, data) rather than its alphabetical start; files that are not UTF-8 are skipped.
fn clean_text() -> String {
    let root = stdlib_dir();
    let mut files = Vec::new();
    walk(&root, &root, &mut files);
    files.sort();
    let sizes: Vec<u64> = files.iter().map(|(_, p)| p.metadata().expect("stat").len()).collect();
    let step = (sizes.iter().sum::<u64>() as usize / CLEAN_BUDGET).max(1);
    let mut texts = Vec::new();
    let mut total = 0;
    for (_, path) in files.iter().step_by(step) {
        if total >= CLEAN_BUDGET {
            break;
        }
        if let Ok(text) = String::from_utf8(std::fs::read(path).expect("a readable file")) {
            total += text.len();
            texts.push(text);
        }
    }
    texts.join("\n")
}

/// The real loop excerpts, or `None` where ../shared is not beside the repository.
fn loops_text() -> Option<String> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/corpus/loops");
    let Ok(entries) = std::fs::read_dir(&dir) else {
        eprintln!("{}: not found, the loop excerpts are left out", dir.display());
        return None;
    };
    let mut paths: Vec<PathBuf> = entries
        .map(|e| e.expect("a readable directory entry").path())
        .filter(|p| p.extension().is_some_and(|e| e == "txt"))
        .collect();
    paths.sort();
    let texts: Vec<String> = paths.iter().map(|p| std::fs::read_to_string(p).expect("a UTF-8 excerpt")).collect();
    Some(texts.join("\n"))
}

fn incident_text() -> String {
    format!("{INCIDENT_PROSE}{}", INCIDENT_LOOP.repeat(INCIDENT_REPEATS))
}

/// `text` cut at char boundaries into pieces of at most `max_bytes` bytes.
fn byte_chunks(text: &str, max_bytes: usize) -> Vec<&str> {
    let mut chunks = Vec::new();
    let mut rest = text;
    while !rest.is_empty() {
        let mut end = max_bytes.min(rest.len());
        while !rest.is_char_boundary(end) {
            end -= 1;
        }
        let (chunk, tail) = rest.split_at(end);
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

/// `text` cut into pieces of `n` chars, as a model streams tokens.
fn char_deltas(text: &str, n: usize) -> Vec<&str> {
    let starts: Vec<usize> = text.char_indices().map(|(i, _)| i).step_by(n).chain([text.len()]).collect();
    starts.windows(2).map(|w| &text[w[0]..w[1]]).collect()
}

fn feed_all<'a>(pieces: &'a [&'a str]) -> impl FnMut(&mut Detector) -> usize + 'a {
    move |detector| {
        let mut found = Vec::new();
        for piece in pieces {
            detector.feed_str(black_box(piece), &mut found);
        }
        found.len()
    }
}

fn benches(c: &mut Criterion) {
    let inputs = [("clean", Some(clean_text())), ("loops", loops_text()), ("incident", Some(incident_text()))];
    let inputs = inputs.iter().filter_map(|(name, text)| Some((name, text.as_ref()?)));
    let mut group = c.benchmark_group("core");
    // Each input takes from microseconds (loops) to tens of milliseconds (clean): ten samples
    // keep a full run short on a 2-core machine, and criterion reports their spread.
    group.sample_size(10);
    for (name, text) in inputs {
        group.throughput(Throughput::Bytes(text.len() as u64));
        let chunks = byte_chunks(text, 2048);
        let deltas = char_deltas(text, 4);
        // A fresh detector per iteration, made outside the timing: the feed is what is measured.
        let fresh = || Detector::new(DEFAULT_RULES);
        group.bench_function(BenchmarkId::new("feed_2k_chunks", name), |b| {
            b.iter_batched_ref(fresh, feed_all(&chunks), BatchSize::SmallInput)
        });
        group.bench_function(BenchmarkId::new("feed_4char_deltas", name), |b| {
            b.iter_batched_ref(fresh, feed_all(&deltas), BatchSize::SmallInput)
        });
        group.bench_function(BenchmarkId::new("scan_str", name), |b| {
            b.iter(|| scan_str(black_box(text), &DEFAULT_RULES))
        });
        // The ceiling: one pass that only reads every byte.
        group.bench_function(BenchmarkId::new("byte_sum", name), |b| {
            b.iter(|| black_box(text).bytes().map(u64::from).sum::<u64>())
        });
    }
    group.finish();
}

criterion_group!(core, benches);
criterion_main!(core);
