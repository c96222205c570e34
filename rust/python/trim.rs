//! `trim`: the text to persist, each degenerate region cut to its first copies plus a marker.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PySlice, PyString};

use super::findings::PyFinding;
use super::input::{text_arg, Int, DETACH_ABOVE_BYTES};
use super::rules::{rules_arg, PyRules};
use crate::{marker, Removal, DEFAULT_KEEP};

/// One region that `trim` shortened.
#[pyclass(name = "Removal", module = "loopbreak", frozen)]
pub struct PyRemoval {
    inner: Removal,
    /// The note that replaced the removed units in the trimmed text, exactly as written there.
    marker: String,
}

#[pymethods]
impl PyRemoval {
    #[getter]
    fn finding(&self) -> PyFinding {
        PyFinding::from(self.inner.finding.clone())
    }
    #[getter]
    fn start(&self) -> u64 {
        self.inner.start
    }
    #[getter]
    fn end(&self) -> u64 {
        self.inner.end
    }
    #[getter]
    fn units(&self) -> u64 {
        self.inner.units()
    }
    #[getter]
    fn repeats(&self) -> u64 {
        self.inner.repeats
    }
    #[getter]
    fn marker(&self) -> &str {
        &self.marker
    }

    /// The removal as a dict of plain values (its finding as a dict), for JSON.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("finding", self.finding().to_dict(py)?)?;
        dict.set_item("start", self.inner.start)?;
        dict.set_item("end", self.inner.end)?;
        dict.set_item("units", self.inner.units())?;
        dict.set_item("repeats", self.inner.repeats)?;
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        format!(
            "Removal(rule='{}', start={}, end={}, units={}, repeats={})",
            self.inner.finding.rule,
            self.inner.start,
            self.inner.end,
            self.inner.units(),
            self.inner.repeats
        )
    }
}

/// The text to persist, and what was removed from it.
#[pyclass(name = "Trimmed", module = "loopbreak", frozen)]
pub struct PyTrimmed {
    #[pyo3(get)]
    text: Py<PyString>,
    removals: Vec<Py<PyRemoval>>,
}

#[pymethods]
impl PyTrimmed {
    #[getter]
    fn removals(&self, py: Python<'_>) -> Vec<Py<PyRemoval>> {
        self.removals.iter().map(|r| r.clone_ref(py)).collect()
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        format!("Trimmed(len(text)={}, removals={})", self.text.bind(py).len().unwrap_or(0), self.removals.len())
    }
}

/// Shortens every degenerate region of `text` to its first `keep` copies plus a marker. The
/// regions are found over the text as CPython stores it (one, two or four bytes per code point),
/// and the result is joined from slices of it: an ASCII text is never widened to four bytes per
/// unit, and a text without loops comes back as the same object.
#[pyfunction]
#[pyo3(signature = (text, keep = Int::from(DEFAULT_KEEP), rules = None))]
pub fn trim(
    py: Python<'_>,
    text: &Bound<'_, PyAny>,
    keep: Int,
    rules: Option<&Bound<'_, PyRules>>,
) -> PyResult<PyTrimmed> {
    let keep = keep.get(1u64).ok_or_else(|| PyValueError::new_err(format!("keep must be in 1..2**64, got {keep}")))?;
    let rules = rules_arg(rules);
    let units = text_arg(text, "text")?;
    let run = || units.removals(&rules, keep);
    let removals = if units.len_bytes() > DETACH_ABOVE_BYTES { py.detach(run) } else { run() };
    let len = text.len()?;
    let removals = removals
        .into_iter()
        .map(|inner| {
            let marker = marker(&inner, (inner.end as usize) < len);
            PyRemoval { inner, marker }
        })
        .collect::<Vec<_>>();
    let trimmed = if removals.is_empty() { text.clone() } else { joined(text, &removals)? };
    let removals = removals.into_iter().map(|removal| Py::new(py, removal)).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTrimmed { text: trimmed.cast_into::<PyString>()?.unbind(), removals })
}

/// The slices of `text` outside `removals`, each removal replaced by its marker.
fn joined<'py>(text: &Bound<'py, PyAny>, removals: &[PyRemoval]) -> PyResult<Bound<'py, PyAny>> {
    let py = text.py();
    let len = text.len()?;
    let pieces = PyList::empty(py);
    let mut cursor = 0;
    for removal in removals {
        let (start, end) = (removal.inner.start as usize, removal.inner.end as usize);
        pieces.append(text.get_item(PySlice::new(py, cursor as isize, start as isize, 1))?)?;
        pieces.append(&removal.marker)?;
        cursor = end;
    }
    pieces.append(text.get_item(PySlice::new(py, cursor as isize, len as isize, 1))?)?;
    PyString::new(py, "").call_method1("join", (pieces,))
}
