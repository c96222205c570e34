//! Whole texts: `scan`, and `scan_many` / `scan_utf8_texts` / `scan_utf8_columns` over many
//! texts on all cores.

use pyo3::buffer::PyBuffer;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyString};

use super::findings::{wrap, PyFinding};
use super::input::{ids_arg, text_arg, Ids, Int, Text, DETACH_ABOVE_BYTES};
use super::rules::{rules_arg, PyRules};
use crate::map_parallel;

/// Every degenerate region of a whole text.
#[pyfunction]
#[pyo3(signature = (text, rules = None))]
pub fn scan(py: Python<'_>, text: &Bound<'_, PyAny>, rules: Option<&Bound<'_, PyRules>>) -> PyResult<Vec<PyFinding>> {
    let rules = rules_arg(rules);
    let text = text_arg(text, "text")?;
    let run = || text.scan(&rules);
    let findings = if text.len_bytes() > DETACH_ABOVE_BYTES { py.detach(run) } else { run() };
    Ok(wrap(findings))
}

/// `threads=`: at least 1 (more than the cores are worked as many as the cores).
pub(super) fn threads_arg(threads: Option<Int>) -> PyResult<Option<usize>> {
    threads
        .map(|n| {
            n.get(1usize)
                .ok_or_else(|| PyValueError::new_err(format!("threads must be at least 1 and below 2**64, got {n}")))
        })
        .transpose()
}

/// The findings of every text, in order, scanned on all cores (or `threads`) with the GIL released.
#[pyfunction]
#[pyo3(signature = (texts, rules = None, threads = None))]
pub fn scan_many(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    rules: Option<&Bound<'_, PyRules>>,
    threads: Option<Int>,
) -> PyResult<Vec<Vec<PyFinding>>> {
    let rules = rules_arg(rules);
    let threads = threads_arg(threads)?;
    if texts.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("texts must be an iterable of str, not a single str"));
    }
    let items: Vec<Bound<'_, PyAny>> = texts.try_iter()?.collect::<PyResult<_>>()?;
    let texts = items.iter().map(|item| text_arg(item, "each text")).collect::<PyResult<Vec<Text<'_>>>>()?;
    let found = py.detach(|| map_parallel(&texts, |text| text.scan(&rules), threads));
    Ok(found.into_iter().map(wrap).collect())
}

/// `scan_many` over an Arrow-style string column given as its UTF-8 `data` buffer and its
/// `offsets` buffer (int32 or int64, one more than the rows): returns the findings as columns
/// of little-endian int64 bytes (row, rule, period, start, repeats, detected_at, end), the rule
/// as its code (`Rule::code`: its place in `RULE_NAMES`).
#[pyfunction]
#[pyo3(signature = (data, offsets, rules = None, threads = None))]
pub fn scan_utf8_columns<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    rules: Option<&Bound<'py, PyRules>>,
    threads: Option<Int>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let rules = rules_arg(rules);
    let threads = threads_arg(threads)?;
    let column = Utf8Column::read(py, data, offsets)?;
    let rows = column.rows()?;
    let found = py.detach(|| crate::scan_many(&rows, &rules, threads));
    let mut columns: [Vec<u8>; 7] = Default::default();
    for (row, findings) in found.iter().enumerate() {
        for f in findings {
            let values = [
                row as i64,
                i64::from(f.rule.code()),
                f.period as i64,
                f.start as i64,
                f.repeats as i64,
                f.detected_at as i64,
                f.end as i64,
            ];
            for (column, value) in columns.iter_mut().zip(values) {
                column.extend_from_slice(&value.to_le_bytes());
            }
        }
    }
    Ok(columns.iter().map(|c| PyBytes::new(py, c)).collect())
}

/// `scan_many` over an Arrow-style string column (see `scan_utf8_columns`), with the findings
/// as `Finding` objects: no Python object is made for a row, only for a finding.
#[pyfunction]
#[pyo3(signature = (data, offsets, rules = None, threads = None))]
pub fn scan_utf8_texts<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    rules: Option<&Bound<'py, PyRules>>,
    threads: Option<Int>,
) -> PyResult<Vec<Vec<PyFinding>>> {
    let rules = rules_arg(rules);
    let threads = threads_arg(threads)?;
    let column = Utf8Column::read(py, data, offsets)?;
    let rows = column.rows()?;
    let found = py.detach(|| crate::scan_many(&rows, &rules, threads));
    Ok(found.into_iter().map(wrap).collect())
}

/// An Arrow-style string column copied out of its buffers: the UTF-8 bytes and each row's range.
struct Utf8Column {
    data: Vec<u8>,
    bounds: Vec<(usize, usize)>,
}

impl Utf8Column {
    /// Reads `data` (bytes) and `offsets` (int32 or int64, one more than the rows), checking that
    /// the offsets are non-decreasing and inside the data.
    fn read(py: Python<'_>, data: &Bound<'_, PyAny>, offsets: &Bound<'_, PyAny>) -> PyResult<Utf8Column> {
        let data = PyBuffer::<u8>::get(data)?.to_vec(py)?;
        let ids = ids_arg(offsets, &Ids { name: "offsets", item: "offsets" })?;
        let bounds: Vec<(usize, usize)> = ids.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect();
        if bounds.iter().any(|&(a, b)| a > b || b > data.len()) {
            return Err(PyValueError::new_err("offsets must be non-decreasing and within data"));
        }
        Ok(Utf8Column { data, bounds })
    }

    /// Each row as text; an error names the first row that is not valid UTF-8.
    fn rows(&self) -> PyResult<Vec<&str>> {
        self.bounds
            .iter()
            .map(|&(a, b)| std::str::from_utf8(&self.data[a..b]))
            .collect::<Result<_, _>>()
            .map_err(|e| PyValueError::new_err(format!("a row is not valid UTF-8: {e}")))
    }
}
