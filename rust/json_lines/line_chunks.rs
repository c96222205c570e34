//! A stream read in chunks of whole lines on a thread of its own, ahead of whoever works on
//! the chunks, in buffers handed back for reuse.
//!
//! The next chunk is read while the current one is worked on, and a chunk's buffer, once done
//! with, is filled again rather than a fresh one allocated: fresh buffers cost a page fault per
//! 4 KiB page on first touch, as much as the read itself.

use std::io::{self, Read};
use std::sync::mpsc::{self, Receiver, Sender};
use std::thread;

/// Chunks read ahead of the one being worked on (besides the one being read).
const AHEAD: usize = 1;

/// The chunks of a stream, in order: each holds the whole lines (ending with `\n`; the stream's
/// last line may not) that end within its first `chunk_bytes`, or one longer line. A read
/// error ends the chunks: the lines read whole before it come first, then the error.
pub struct LineChunks {
    chunks: Receiver<io::Result<Vec<u8>>>,
    spare: Sender<Vec<u8>>,
}

impl LineChunks {
    /// Starts reading `source` on a new thread. The thread stops at the stream's end, at a read
    /// error, or once these chunks are dropped (after the read it is waiting on returns).
    pub fn read(source: impl Read + Send + 'static, chunk_bytes: usize) -> io::Result<Self> {
        let (sender, chunks) = mpsc::sync_channel(AHEAD);
        let (spare, spares) = mpsc::channel();
        thread::Builder::new().name("loopbreak-read".into()).spawn(move || {
            let mut cutter = LineCutter::new(source, chunk_bytes);
            while let Some(chunk) = cutter.next_chunk(spares.try_recv().unwrap_or_default()) {
                if sender.send(chunk).is_err() {
                    return;
                }
            }
        })?;
        Ok(LineChunks { chunks, spare })
    }

    /// The next chunk (waiting for it), None after the last.
    pub fn next_chunk(&self) -> Option<io::Result<Vec<u8>>> {
        self.chunks.recv().ok()
    }

    /// Where a chunk's buffer is handed back, once done with, to be filled again (a buffer
    /// handed back after the reader has finished is simply freed).
    pub fn recycler(&self) -> Sender<Vec<u8>> {
        self.spare.clone()
    }
}

/// Cuts a stream into the chunks of [`LineChunks`] on the caller's thread, one chunk a call.
pub struct LineCutter<R> {
    source: R,
    chunk_bytes: usize,
    /// The start of a line cut off at the end of the last chunk.
    carried: Vec<u8>,
    /// The read error to give after the chunk read before it.
    error: Option<io::Error>,
    done: bool,
}

impl<R: Read> LineCutter<R> {
    pub fn new(source: R, chunk_bytes: usize) -> Self {
        LineCutter { source, chunk_bytes: chunk_bytes.max(1), carried: Vec::new(), error: None, done: false }
    }

    /// The next chunk, read into `buffer` (a spare one, or a new one); None after the last.
    pub fn next_chunk(&mut self, mut chunk: Vec<u8>) -> Option<io::Result<Vec<u8>>> {
        while !self.done {
            if let Some(error) = self.error.take() {
                self.done = true;
                return Some(Err(error));
            }
            chunk.clear();
            chunk.append(&mut self.carried);
            let chunk_bytes = self.chunk_bytes;
            let mut ended = false;
            // The carried start of a line has no newline: only what is read from here on is searched.
            let mut has_newline = false;
            loop {
                // Fill up to `chunk_bytes`, then as much again while no line has ended.
                let wanted = if chunk.len() < chunk_bytes { chunk_bytes - chunk.len() } else { chunk_bytes };
                let before = chunk.len();
                chunk.reserve(wanted);
                match (&mut self.source).take(wanted as u64).read_to_end(&mut chunk) {
                    Ok(got) => ended = got < wanted,
                    // The bytes read before the error are in the chunk.
                    Err(error) => self.error = Some(error),
                }
                has_newline = has_newline || memchr::memchr(b'\n', &chunk[before..]).is_some();
                if ended || self.error.is_some() || (chunk.len() >= chunk_bytes && has_newline) {
                    break;
                }
            }
            if ended {
                self.done = true;
            } else {
                // Whole lines only: the last, unfinished one goes on in the next chunk.
                let cut = memchr::memrchr(b'\n', &chunk).map_or(0, |newline| newline + 1);
                self.carried.extend_from_slice(&chunk[cut..]);
                chunk.truncate(cut);
            }
            if !chunk.is_empty() {
                return Some(Ok(chunk));
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out its bytes in reads of at most `step`, then fails with `error` if given.
    struct Trickle {
        data: Vec<u8>,
        at: usize,
        step: usize,
        error: Option<io::ErrorKind>,
    }

    impl Read for Trickle {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = self.step.min(buf.len()).min(self.data.len() - self.at);
            if n == 0 {
                if let Some(kind) = self.error {
                    return Err(kind.into());
                }
            }
            buf[..n].copy_from_slice(&self.data[self.at..self.at + n]);
            self.at += n;
            Ok(n)
        }
    }

    fn chunks_of(
        data: &[u8],
        step: usize,
        chunk_bytes: usize,
        error: Option<io::ErrorKind>,
    ) -> Vec<io::Result<Vec<u8>>> {
        let source = Trickle { data: data.to_vec(), at: 0, step, error };
        let chunks = LineChunks::read(source, chunk_bytes).unwrap();
        let recycler = chunks.recycler();
        let mut got = Vec::new();
        while let Some(chunk) = chunks.next_chunk() {
            if let Ok(data) = &chunk {
                // Handed back, it is filled again with the right bytes (checked by the joins below).
                let _ = recycler.send(data.clone());
            }
            got.push(chunk);
        }
        got
    }

    #[test]
    fn chunks_are_whole_lines_that_join_to_the_stream() {
        let data: Vec<u8> = (0..200).flat_map(|i| format!("line {i} {}\n", "x".repeat(i % 37)).into_bytes()).collect();
        for ending in [&b""[..], b"no newline at the end"] {
            let data = [&data[..], ending].concat();
            for (step, chunk_bytes) in [(1, 1), (3, 10), (7, 64), (4096, 100), (4096, 1 << 20), (5, 1000)] {
                let chunks: Vec<Vec<u8>> =
                    chunks_of(&data, step, chunk_bytes, None).into_iter().map(Result::unwrap).collect();
                assert_eq!(chunks.concat(), data, "step {step}, chunk_bytes {chunk_bytes}");
                let (last, whole) = chunks.split_last().unwrap();
                for chunk in whole {
                    assert!(chunk.ends_with(b"\n"));
                }
                assert_eq!(last.ends_with(b"\n"), ending.is_empty());
            }
        }
    }

    #[test]
    fn a_line_longer_than_a_chunk_is_one_chunk() {
        let data = [b"short\n".as_slice(), &b"y".repeat(5000), b"\nend\n"].concat();
        let chunks: Vec<Vec<u8>> = chunks_of(&data, 100, 64, None).into_iter().map(Result::unwrap).collect();
        assert_eq!(chunks.concat(), data);
        assert!(chunks.iter().any(|chunk| chunk.len() > 5000 && chunk.ends_with(b"\n")));
    }

    #[test]
    fn an_empty_stream_has_no_chunks() {
        assert!(chunks_of(b"", 10, 10, None).is_empty());
    }

    #[test]
    fn a_read_error_comes_after_the_lines_read_whole_before_it() {
        let data = b"one\ntwo\nthr";
        let got = chunks_of(data, 2, 1 << 20, Some(io::ErrorKind::PermissionDenied));
        let (last, lines) = got.split_last().unwrap();
        assert_eq!(last.as_ref().unwrap_err().kind(), io::ErrorKind::PermissionDenied);
        let lines: Vec<u8> = lines.iter().flat_map(|chunk| chunk.as_ref().unwrap().clone()).collect();
        assert_eq!(lines, b"one\ntwo\n");
    }
}
