//! `JsonLinesScan`: a stream of JSON lines read and scanned in Rust (`crate::ScannedChunks`) on
//! threads of its own, chunk by chunk, ahead of the Python code that reports each chunk; only
//! what `loopbreak scan` reports becomes a Python object.

use std::fs::File;
use std::io::{self, Read};
use std::os::fd::{BorrowedFd, RawFd};
use std::sync::mpsc::Sender;
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::panic::PanicException;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyInt, PyList};

use super::batch::threads_arg;
use super::findings::{wrap, PyFinding};
use super::input::Int;
use super::rules::{rules_arg, PyRules};
use crate::{Kind, ScannedChunk, ScannedChunks, Segment, StreamError};

/// How long `__next__` waits with the GIL released before it looks for a signal (Ctrl-C)
/// and waits again.
const SIGNAL_CHECK: Duration = Duration::from_millis(100);

/// The chunks of a JSON-lines stream, each read and scanned while the one before is reported.
#[pyclass(name = "JsonLinesScan", module = "loopbreak", frozen)]
pub struct PyJsonLinesScan {
    chunks: Mutex<ScannedChunks>,
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
        let chunks = if source.is_instance_of::<PyInt>() {
            let fd: RawFd = source.extract()?;
            if fd < 0 {
                return Err(PyValueError::new_err(format!("a file descriptor is at least 0, got {fd}")));
            }
            // SAFETY: the caller's descriptor stays open while it is duplicated here (the caller
            // holds it for the whole call); the duplicate is this reader's own from then on.
            let file = unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().map_err(|e| os_error(py, e))?;
            ScannedChunks::scan(File::from(file), path, rules, threads, chunk_bytes)
        } else {
            ScannedChunks::scan(PyStream(source.clone().unbind()), path, rules, threads, chunk_bytes)
        }
        .map_err(|e| os_error(py, e))?;
        Ok(PyJsonLinesScan { chunks: Mutex::new(chunks) })
    }

    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// The next chunk scanned (waiting for it with the GIL released); a read error is raised
    /// as the `OSError` Python's own read would raise, after every chunk before it.
    fn __next__(&self, py: Python<'_>) -> PyResult<Option<PyJsonLines>> {
        loop {
            let next = py.detach(|| {
                let chunks = self.chunks.lock().unwrap_or_else(PoisonError::into_inner);
                chunks.next_within(SIGNAL_CHECK).map(|next| (next, chunks.recycler()))
            });
            match next {
                Err(_) => py.check_signals()?,
                Ok((None, _)) => return Ok(None),
                Ok((Some(Ok(chunk)), recycler)) => return PyJsonLines::new(py, chunk, recycler).map(Some),
                Ok((Some(Err(StreamError::Read(error))), _)) => return Err(os_error(py, error)),
                Ok((Some(Err(StreamError::Panicked(message))), _)) => return Err(PanicException::new_err(message)),
            }
        }
    }
}

/// A stream with no file descriptor (an in-memory one), read through its `read` method with
/// the GIL taken for each read; once the interpreter is shutting down (a scan given up early,
/// its reader still running) a read fails, which ends the reader.
struct PyStream(Py<PyAny>);

impl Read for PyStream {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        Python::try_attach(|py| {
            let data = self.0.bind(py).call_method1("read", (buf.len(),))?;
            let data = data.cast::<PyBytes>()?.as_bytes();
            let n = data.len().min(buf.len());
            buf[..n].copy_from_slice(&data[..n]);
            Ok::<usize, PyErr>(n)
        })
        .ok_or_else(|| io::Error::other("the interpreter is shutting down"))?
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
