//! `JsonLinesScan`: a stream of JSON lines read and scanned in Rust, chunk by chunk; only what
//! `loopbreak scan` reports becomes a Python object. A file descriptor is read and scanned on
//! threads of their own (`ScannedChunks`), ahead of the Python code that reports each chunk. A
//! Python stream is read on the thread that takes the chunks: a thread calling Python could
//! outlive its consumer, and one caught in a read as the interpreter exits is unwound through
//! Rust frames, which aborts the process.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Mutex, PoisonError, TryLockError};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyRuntimeError, PyValueError};
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList};

use super::batch::threads_arg;
use super::findings::{wrap, PyFinding};
use super::input::Int;
use super::rules::{rules_arg, PyRules};
use crate::json_lines::{scan_chunk, ChunkResult, Kind, LineCutter, ScannedChunk, ScannedChunks, Segment, StreamError};
use crate::Rules;

/// How long `__next__` waits with the GIL released before it looks for a signal (Ctrl-C)
/// and waits again.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// The chunks of a JSON-lines stream, each read and scanned while the one before is reported.
#[pyclass(name = "JsonLinesScan", module = "loopbreak", frozen)]
pub struct PyJsonLinesScan {
    chunks: Chunks,
}

enum Chunks {
    /// A file descriptor, read and scanned ahead.
    Ahead(Mutex<ScannedChunks>),
    /// A Python stream, read when a chunk is taken.
    Here(Mutex<ReadHere>),
}

/// A Python stream, cut into chunks on the caller's thread, each scanned as it is taken.
struct ReadHere {
    cutter: LineCutter<PyStream>,
    first: bool,
    path: Vec<Segment>,
    rules: Rules,
    threads: Option<usize>,
    /// The chunks' buffers, handed back once reported.
    spare: Sender<Vec<u8>>,
    spares: Receiver<Vec<u8>>,
}

impl ReadHere {
    fn next(&mut self, py: Python<'_>) -> Option<(ChunkResult, Sender<Vec<u8>>)> {
        let chunk = self.cutter.next_chunk(self.spares.try_recv().unwrap_or_default())?;
        let first = std::mem::take(&mut self.first);
        let (path, rules, threads) = (&self.path, &self.rules, self.threads);
        let result = match chunk {
            Ok(data) => py.detach(|| scan_chunk(data, first, path, rules, threads)),
            Err(error) => Err(StreamError::Read(error)),
        };
        Some((result, self.spare.clone()))
    }
}

#[pymethods]
impl PyJsonLinesScan {
    /// Starts reading `source` (a file descriptor, duplicated so the caller may close its own;
    /// else a binary stream, read through its `read` method) in chunks of about `chunk_bytes`
    /// of whole lines, and scanning the values at the field path `segments` (None for `*`,
    /// else a name and its value as a list index, if it has one) on all cores (or `threads`).
    #[new]
    #[pyo3(signature = (source, segments, chunk_bytes, rules = None, threads = None))]
    fn new(
        py: Python<'_>,
        source: &Bound<'_, PyAny>,
        segments: Vec<Option<(String, Option<i64>)>>,
        chunk_bytes: Int,
        rules: Option<&Bound<'_, PyRules>>,
        threads: Option<Int>,
    ) -> PyResult<Self> {
        let rules = rules_arg(rules);
        let threads = threads_arg(threads)?;
        let chunk_bytes = chunk_bytes.get(1usize).ok_or_else(|| {
            PyValueError::new_err(format!("chunk_bytes must be at least 1 and below 2**64, got {chunk_bytes}"))
        })?;
        let path: Vec<Segment> = segments
            .into_iter()
            .map(|s| s.map_or(Segment::Every, |(name, index)| Segment::Key { name, index }))
            .collect();
        if !source.is_instance_of::<PyInt>() {
            let (spare, spares) = mpsc::channel();
            let cutter = LineCutter::new(PyStream(source.clone().unbind()), chunk_bytes);
            let here = ReadHere { cutter, first: true, path, rules, threads, spare, spares };
            return Ok(PyJsonLinesScan { chunks: Chunks::Here(Mutex::new(here)) });
        }
        let fd: RawFd = source.extract()?;
        if fd < 0 {
            return Err(PyValueError::new_err(format!("a file descriptor is at least 0, got {fd}")));
        }
        // SAFETY: the caller's descriptor stays open while it is duplicated here (the caller
        // holds it for the whole call); the duplicate is this reader's own from then on.
        let file = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().map_err(|e| os_error(py, e))?;
        let chunks =
            ScannedChunks::scan(File::from(file), path, rules, threads, chunk_bytes).map_err(|e| os_error(py, e))?;
        Ok(PyJsonLinesScan { chunks: Chunks::Ahead(Mutex::new(chunks)) })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next chunk scanned (waiting for it with the GIL released); a read error is raised
    /// as the `OSError` Python's own read would raise, after every chunk before it.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyJsonLines>> {
        let next = match &self.chunks {
            Chunks::Ahead(chunks) => loop {
                let next = py.detach(|| {
                    let chunks = chunks.lock().unwrap_or_else(PoisonError::into_inner);
                    chunks.next_within(SIGNAL_CHECK).map(|next| next.map(|result| (result, chunks.recycler())))
                });
                match next {
                    Err(_) => py.check_signals()?,
                    Ok(next) => break next,
                }
            },
            // Taken while holding the GIL, which the stream's read may let go of: a second
            // thread waiting here for the lock would hold the GIL the first one needs back.
            Chunks::Here(here) => match here.try_lock() {
                Ok(mut here) => here.next(py),
                Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner().next(py),
                Err(TryLockError::WouldBlock) => {
                    return Err(PyRuntimeError::new_err("the scan is being read by another thread"))
                }
            },
        };
        match next {
            None => Ok(None),
            Some((Ok(chunk), recycler)) => PyJsonLines::new(py, chunk, recycler).map(Some),
            Some((Err(StreamError::Read(error)), _)) => Err(os_error(py, error)),
            Some((Err(StreamError::Panicked(message)), _)) => Err(PanicException::new_err(message)),
        }
    }
}

/// A stream with no file descriptor (an in-memory one), read through its `read` method on the
/// thread that takes the chunks, which holds the GIL.
struct PyStream(Py<PyAny>);

impl Read for PyStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::attach(|py| {
            let data = self.0.bind(py).call_method1("read", (buf.len(),))?;
            let data = data.cast::<PyBytes>()?.as_bytes();
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            Ok::<usize, PyErr>(n)
        })
        // Kept whole: `PyErr::from(io::Error)` gives back the Python error.
        .map_err(io::Error::other)
    }
}

/// The `OSError` (of the subclass its errno names) with the message Python gives that errno,
/// as Python's own read raises it; an error of a Python stream as that stream raised it.
fn os_error(py: Python<'_>, error: io::Error) -> PyErr {
    let Some(code) = error.raw_os_error() else { return PyErr::from(error) };
    match py.import("os").and_then(|os| os.call_method1("strerror", (code,))) {
        Ok(message) => PyOSError::new_err((code, message.unbind())),
        Err(err) => err,
    }
}

/// What one chunk holds to report. Line numbers count from 0 at the chunk's first line; byte
/// ranges are offsets into the chunk.
#[pyclass(name = "JsonLines", module = "loopbreak", frozen)]
pub struct PyJsonLines {
    /// Lines in the chunk.
    #[pyo3(get)]
    lines: usize,
    /// Texts and nulls the path reached in the lines read.
    #[pyo3(get)]
    rows: usize,
    /// `(line, start, end)` of the first line read (neither blank nor left unread), if any.
    #[pyo3(get)]
    first_read: Option<(usize, usize, usize)>,
    /// `(line, start, end)` of each line left to Python's `json`, in order.
    #[pyo3(get)]
    unread: Py<PyList>,
    /// `(line, path, kind)` of each value reached that is neither text nor null, in order; kind
    /// is `"a boolean"`, `"a number"`, `"an object"` or `"a list"`.
    #[pyo3(get)]
    not_text: Py<PyList>,
    /// `(line, slot, start, end, path, text, findings)` of each text with findings, in order;
    /// `slot` is the value's index among those the path reached in its line.
    #[pyo3(get)]
    found: Py<PyList>,
    /// The chunk's bytes, handed back to the reader once this object is freed.
    data: Vec<u8>,
    recycler: Sender<Vec<u8>>,
}

impl PyJsonLines {
    fn new(py: Python<'_>, chunk: ScannedChunk, recycler: Sender<Vec<u8>>) -> PyResult<Self> {
        let (unread, not_text, found) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
        for (line, bytes) in chunk.unread {
            unread.append((line, bytes.start, bytes.end))?;
        }
        for (line, path, kind) in chunk.not_text {
            not_text.append((line, path, kind_words(kind)))?;
        }
        for text in chunk.found {
            let findings: Vec<PyFinding> = wrap(text.findings);
            found.append((text.line, text.slot, text.bytes.start, text.bytes.end, text.path, text.text, findings))?;
        }
        Ok(PyJsonLines {
            lines: chunk.lines,
            rows: chunk.rows,
            first_read: chunk.first_read.map(|(line, bytes)| (line, bytes.start, bytes.end)),
            unread: unread.unbind(),
            not_text: not_text.unbind(),
            found: found.unbind(),
            data: chunk.data,
            recycler,
        })
    }
}

#[pymethods]
impl PyJsonLines {
    /// The chunk's bytes (a copy).
    #[getter]
    fn data<'py>(&self, py: Python<'py>) -> Bound<'py, PyBytes> {
        PyBytes::new(py, &self.data)
    }

    /// Bytes in the chunk.
    #[getter]
    fn size(&self) -> usize {
        self.data.len()
    }
}

impl Drop for PyJsonLines {
    fn drop(&mut self) {
        // The reader may be done: the buffer is then freed.
        let _ = self.recycler.send(std::mem::take(&mut self.data));
    }
}

fn kind_words(kind: Kind) -> &'static str {
    match kind {
        Kind::Boolean => "a boolean",
        Kind::Number => "a number",
        Kind::Object => "an object",
        Kind::List => "a list",
    }
}
