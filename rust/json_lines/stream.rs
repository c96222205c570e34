//! A stream of JSON lines scanned as it is read: one thread reads chunks of whole lines ahead
//! ([`LineChunks`]), another has each chunk read and scanned on all cores ([`scan_lines`]), and
//! whoever takes the results reports one chunk while the next is read and scanned. A result
//! owns its chunk's bytes and only what there is to report: the texts with findings, the values
//! that are not text, the lines left to Python's `json`.

use std::io::{self, Read};
use std::ops::Range;
use std::panic::{self, AssertUnwindSafe};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, Sender};
use std::thread;
use std::time::Duration;

use super::line_chunks::LineChunks;
use super::read::{scan_lines, Kind, Scan, Segment, Told, Value};
use crate::finding::Finding;
use crate::rules::Rules;

/// The byte-order mark a UTF-8 file may start with: kept in the chunk's bytes, not part of the
/// stream's first line.
const BOM: &[u8] = b"\xef\xbb\xbf";

/// What one chunk of lines holds to report. Lines count from 0 at the chunk's first line; byte
/// ranges (a line with its newline) are offsets into `data`.
#[derive(Debug)]
pub struct ScannedChunk {
    /// The chunk's bytes: whole lines.
    pub data: Vec<u8>,
    pub lines: usize,
    /// Texts and nulls reached in the lines read.
    pub rows: usize,
    /// The first line read (neither blank nor left unread), if any.
    pub first_read: Option<(usize, Range<usize>)>,
    /// The lines left to Python's `json`, in order.
    pub unread: Vec<(usize, Range<usize>)>,
    /// Each value reached that is neither text nor null: line, path, kind.
    pub not_text: Vec<(usize, String, Kind)>,
    /// Each text with findings, in order.
    pub found: Vec<FoundText>,
}

/// A text with findings: its line, its index among the values reached in that line, the line's
/// bytes, where the text is, the text and its findings.
#[derive(Debug, PartialEq, Eq)]
pub struct FoundText {
    pub line: usize,
    pub slot: usize,
    pub bytes: Range<usize>,
    pub path: String,
    pub text: String,
    pub findings: Vec<Finding>,
}

/// Why the chunks stopped before the stream's end.
#[derive(Debug)]
pub enum StreamError {
    Read(io::Error),
    /// The scan of a chunk panicked (a bug): its message.
    Panicked(String),
}

/// A chunk scanned, or why the chunks stopped.
pub type ChunkResult = Result<ScannedChunk, StreamError>;

/// The scanned chunks of a stream, in order; an error is the last.
pub struct ScannedChunks {
    results: Receiver<ChunkResult>,
    spare: Sender<Vec<u8>>,
}

impl ScannedChunks {
    /// Starts reading `source` in chunks of about `chunk_bytes` and scanning each at the field
    /// `path`, on threads of their own; they stop at the stream's end, at an error, or once
    /// these chunks are dropped.
    pub fn scan(
        source: impl Read + Send + 'static,
        path: Vec<Segment>,
        rules: Rules,
        threads: Option<usize>,
        chunk_bytes: usize,
    ) -> io::Result<Self> {
        let chunks = LineChunks::read(source, chunk_bytes)?;
        let spare = chunks.recycler();
        // One result waits while the one before is reported.
        let (sender, results) = mpsc::sync_channel(1);
        thread::Builder::new().name("loopbreak-scan".into()).spawn(move || {
            let mut first = true;
            while let Some(chunk) = chunks.next_chunk() {
                let result = match chunk {
                    Ok(data) => scan_chunk(data, std::mem::take(&mut first), &path, &rules, threads),
                    Err(error) => Err(StreamError::Read(error)),
                };
                let last = result.is_err();
                if sender.send(result).is_err() || last {
                    return;
                }
            }
        })?;
        Ok(ScannedChunks { results, spare })
    }

    /// The next chunk, waiting at most `timeout` for it: `Ok(None)` after the last, `Err` if
    /// it is not there yet.
    pub fn next_within(&self, timeout: Duration) -> Result<Option<ChunkResult>, RecvTimeoutError> {
        match self.results.recv_timeout(timeout) {
            Ok(result) => Ok(Some(result)),
            Err(RecvTimeoutError::Disconnected) => Ok(None),
            Err(RecvTimeoutError::Timeout) => Err(RecvTimeoutError::Timeout),
        }
    }

    /// Where a chunk's bytes are handed back once reported, to be filled again.
    pub fn recycler(&self) -> Sender<Vec<u8>> {
        self.spare.clone()
    }
}

/// Reads and scans one chunk of whole lines (`first`: the stream's first, whose [`BOM`] is no
/// part of its first line) on all cores (or `threads`); a panic (a bug) is an error.
pub fn scan_chunk(data: Vec<u8>, first: bool, path: &[Segment], rules: &Rules, threads: Option<usize>) -> ChunkResult {
    panic::catch_unwind(AssertUnwindSafe(|| scanned(data, first, path, rules, threads)))
        .map_err(|panic| StreamError::Panicked(panic_message(&*panic)))
}

fn scanned(data: Vec<u8>, first: bool, path: &[Segment], rules: &Rules, threads: Option<usize>) -> ScannedChunk {
    let skip = if first && data.starts_with(BOM) { BOM.len() } else { 0 };
    let mut lines = scan_lines(&data[skip..], path, rules, threads);
    for line in &mut lines {
        line.bytes = line.bytes.start + skip..line.bytes.end + skip;
    }
    let (mut rows, mut first_read) = (0, None);
    let (mut unread, mut not_text, mut found) = (Vec::new(), Vec::new(), Vec::new());
    let count = lines.len();
    for (number, line) in lines.into_iter().enumerate() {
        match line.scan {
            Scan::Blank => {}
            Scan::Unread => unread.push((number, line.bytes)),
            Scan::Read { rows: read, told } => {
                first_read.get_or_insert((number, line.bytes.clone()));
                rows += read;
                for Told { slot, reached, findings } in told {
                    match reached.value {
                        Value::Text(text) => found.push(FoundText {
                            line: number,
                            slot,
                            bytes: line.bytes.clone(),
                            path: reached.path,
                            text: text.into_owned(),
                            findings,
                        }),
                        Value::Other(kind) => not_text.push((number, reached.path, kind)),
                        Value::Null => {}
                    }
                }
            }
        }
    }
    ScannedChunk { data, lines: count, rows, first_read, unread, not_text, found }
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "the JSON-lines scan panicked".to_owned())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{scan_str, DEFAULT_RULES};

    fn every_t() -> Vec<Segment> {
        vec![Segment::Key { name: "t".into(), index: None }]
    }

    /// The chunks of `data` scanned at the field `t`.
    fn scan_t(data: &str, chunk_bytes: usize) -> ScannedChunks {
        ScannedChunks::scan(io::Cursor::new(data.as_bytes().to_vec()), every_t(), DEFAULT_RULES, None, chunk_bytes)
            .unwrap()
    }

    fn all(chunks: &ScannedChunks) -> Vec<ChunkResult> {
        let mut got = Vec::new();
        loop {
            match chunks.next_within(Duration::from_secs(60)) {
                Ok(Some(result)) => got.push(result),
                Ok(None) => return got,
                Err(timeout) => panic!("{timeout}"),
            }
        }
    }

    /// Fails with `PermissionDenied` once its bytes are read.
    struct ThenFails(io::Cursor<Vec<u8>>);

    impl Read for ThenFails {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            match self.0.read(buf)? {
                0 => Err(io::ErrorKind::PermissionDenied.into()),
                n => Ok(n),
            }
        }
    }

    #[test]
    fn chunks_report_their_lines_in_order_whatever_their_size() {
        let looping = "loadTools. ".repeat(60);
        let lines: Vec<String> = (0..40)
            .map(|i| match i % 5 {
                0 => format!("{{\"t\":\"{looping}{i}\"}}"),
                1 => "not json".to_owned(),
                2 => format!("{{\"t\":{i}}}"),
                3 => String::new(),
                _ => format!("{{\"t\":\"clean {i}\"}}"),
            })
            .collect();
        let data = lines.join("\n");
        for chunk_bytes in [1, 100, 1000, 1 << 20] {
            let chunks = scan_t(&data, chunk_bytes);
            let recycler = chunks.recycler();
            let (mut first, mut found, mut unread, mut not_text, mut rows) =
                (None, Vec::new(), Vec::new(), Vec::new(), 0);
            let mut line = 0;
            let mut joined = Vec::new();
            for chunk in all(&chunks) {
                let chunk = chunk.unwrap();
                if first.is_none() {
                    first = chunk.first_read.clone().map(|(number, _)| number + line);
                }
                rows += chunk.rows;
                found.extend(chunk.found.iter().map(|f| (f.line + line, f.text.clone(), f.findings.clone())));
                unread.extend(
                    chunk.unread.iter().map(|(number, bytes)| (number + line, chunk.data[bytes.clone()].to_vec())),
                );
                not_text.extend(chunk.not_text.iter().map(|(number, path, kind)| (number + line, path.clone(), *kind)));
                line += chunk.lines;
                joined.extend_from_slice(&chunk.data);
                // Once the stream is read, the reader takes no more buffers back.
                let _ = recycler.send(chunk.data);
            }
            assert_eq!(joined, data.as_bytes(), "chunk_bytes {chunk_bytes}");
            assert_eq!(line, 40);
            assert_eq!(first, Some(0));
            assert_eq!(rows, 16);
            let want: Vec<(usize, String, Vec<Finding>)> = (0..40)
                .step_by(5)
                .map(|i| {
                    let text = format!("{looping}{i}");
                    let findings = scan_str(&text, &DEFAULT_RULES);
                    (i, text, findings)
                })
                .collect();
            assert!(want.iter().all(|(_, _, findings)| !findings.is_empty()));
            assert_eq!(found, want);
            assert_eq!(unread, (1..40).step_by(5).map(|i| (i, b"not json\n".to_vec())).collect::<Vec<_>>());
            assert_eq!(not_text, (2..40).step_by(5).map(|i| (i, "t".to_owned(), Kind::Number)).collect::<Vec<_>>());
        }
    }

    #[test]
    fn a_byte_order_mark_at_the_start_is_in_the_bytes_not_in_line_one() {
        let looping = "loadTools. ".repeat(60);
        let data = format!("\u{feff}{{\"t\":\"{looping}\"}}\n\u{feff}{{\"t\":\"x\"}}\n");
        for chunk_bytes in [1, 1 << 20] {
            let got: Vec<ScannedChunk> = all(&scan_t(&data, chunk_bytes)).into_iter().map(Result::unwrap).collect();
            assert!(got[0].data.starts_with(BOM));
            assert_eq!(got[0].found[0].bytes.start, BOM.len());
            assert_eq!(got[0].found[0].text, looping);
            // Only the stream's first line may start with one: later, it is not JSON.
            let last = got.last().unwrap();
            assert_eq!(last.unread.len(), 1);
        }
    }

    #[test]
    fn a_read_error_mid_stream_comes_after_the_lines_before_it() {
        let looping = "loadTools. ".repeat(60);
        let data = format!("{{\"t\":\"{looping}\"}}\n{{\"t\":\"clean\"}}\n{{\"t\":\"cut o");
        let source = ThenFails(io::Cursor::new(data.into_bytes()));
        let chunks = ScannedChunks::scan(source, every_t(), DEFAULT_RULES, Some(1), 30).unwrap();
        let got = all(&chunks);
        let (last, before) = got.split_last().unwrap();
        assert!(matches!(last, Err(StreamError::Read(error)) if error.kind() == io::ErrorKind::PermissionDenied));
        let before: Vec<&ScannedChunk> = before.iter().map(|chunk| chunk.as_ref().unwrap()).collect();
        assert_eq!(before.iter().map(|chunk| chunk.lines).sum::<usize>(), 2);
        assert_eq!(before.iter().map(|chunk| chunk.found.len()).sum::<usize>(), 1);
    }
}
