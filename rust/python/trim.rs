//! `trim`: the text to persist, each degenerate region cut to its first copies plus a marker.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyString};

use super::findings::PyFinding;
use super::input::{text_arg, units_to_str, Int, DETACH_ABOVE_BYTES};
use super::rules::{rules_arg, PyRules};
use crate::{trim_units, Removal, DEFAULT_KEEP};

/// One region that `trim` shortened.
#[pyclass(name = "Removal", module = "loopbreak", frozen)]
pub struct PyRemoval {
    inner: Removal,
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

/// Shortens every degenerate region of `text` to its first `keep` copies plus a marker.
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
    let text = text_arg(text, "text")?;
    let run = || trim_units(&text.to_units(), &rules, keep);
    let trimmed = if text.len_bytes() > DETACH_ABOVE_BYTES { py.detach(run) } else { run() };
    let removals =
        trimmed.removals.into_iter().map(|inner| Py::new(py, PyRemoval { inner })).collect::<PyResult<Vec<_>>>()?;
    Ok(PyTrimmed { text: units_to_str(py, &trimmed.units)?.unbind(), removals })
}
