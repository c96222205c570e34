//! `scan_json_lines`: a chunk of JSON lines read and scanned in Rust (`crate::json_lines`), with
//! the GIL released; only what `loopbreak scan` reports becomes a Python object.

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList};

use super::batch::threads_arg;
use super::findings::{wrap, PyFinding};
use super::input::Int;
use super::rules::{rules_arg, PyRules};
use crate::{scan_lines, Kind, Scan, Segment, Told, Value};

/// What `scan_json_lines` found in a chunk. Line numbers count from 0 at the chunk's first line;
/// byte ranges are offsets into the chunk.
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
}

/// Reads the JSON lines of `data` (a chunk of whole lines), finds the values at the field path
/// `segments` (None for `*`, else a name and its value as a list index, if it has one), and
/// scans every text on all cores (or `threads`).
#[pyfunction]
#[pyo3(signature = (data, segments, rules = None, threads = None))]
pub fn scan_json_lines(
    py: Python<'_>,
    data: &Bound<'_, PyBytes>,
    segments: Vec<Option<(String, Option<i64>)>>,
    rules: Option<&Bound<'_, PyRules>>,
    threads: Option<Int>,
) -> PyResult<PyJsonLines> {
    let rules = rules_arg(rules);
    let threads = threads_arg(threads)?;
    let path: Vec<Segment> =
        segments.into_iter().map(|s| s.map_or(Segment::Every, |(name, index)| Segment::Key { name, index })).collect();
    let bytes = data.as_bytes();
    let scanned = py.detach(|| scan_lines(bytes, &path, &rules, threads));
    let lines = scanned.len();
    let (mut rows, mut first_read) = (0, None);
    let (unread, not_text, found) = (PyList::empty(py), PyList::empty(py), PyList::empty(py));
    for (number, line) in scanned.into_iter().enumerate() {
        let (start, end) = (line.bytes.start, line.bytes.end);
        match line.scan {
            Scan::Blank => {}
            Scan::Unread => unread.append((number, start, end))?,
            Scan::Read { rows: read, told } => {
                first_read.get_or_insert((number, start, end));
                rows += read;
                for Told { slot, reached, findings } in told {
                    match reached.value {
                        Value::Text(text) => {
                            let findings: Vec<PyFinding> = wrap(findings);
                            found.append((number, slot, start, end, reached.path, text.as_ref(), findings))?;
                        }
                        Value::Other(kind) => not_text.append((number, reached.path, kind_words(kind)))?,
                        Value::Null => {}
                    }
                }
            }
        }
    }
    Ok(PyJsonLines {
        lines,
        rows,
        first_read,
        unread: unread.unbind(),
        not_text: not_text.unbind(),
        found: found.unbind(),
    })
}

fn kind_words(kind: Kind) -> &'static str {
    match kind {
        Kind::Boolean => "a boolean",
        Kind::Number => "a number",
        Kind::Object => "an object",
        Kind::List => "a list",
    }
}
