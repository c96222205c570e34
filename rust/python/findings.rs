//! `Finding` (over text: `block` is a `str`) and `TokenFinding` (over token ids: `block` is a
//! `list[int]`). Both wrap the core's `Finding`; everything but the block's type is shared.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

use super::input::units_to_str;
use crate::Finding;

/// One degenerate region of a text: the rule, the period, the block (a `str`), where it starts,
/// its copies, where the rule first held and where it ends.
#[pyclass(name = "Finding", module = "loopbreak", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyFinding {
    inner: Finding,
}

/// A `Finding` over token ids: the block is a `list[int]`.
#[pyclass(name = "TokenFinding", module = "loopbreak", frozen, eq, hash)]
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct PyTokenFinding {
    inner: Finding,
}

impl From<Finding> for PyFinding {
    fn from(inner: Finding) -> Self {
        PyFinding { inner }
    }
}

impl From<Finding> for PyTokenFinding {
    fn from(inner: Finding) -> Self {
        PyTokenFinding { inner }
    }
}

/// A text finding's block: the code points as a `str`.
fn text_block<'py>(py: Python<'py>, units: &[u32]) -> PyResult<Bound<'py, PyAny>> {
    Ok(units_to_str(py, units)?.into_any())
}

/// A token finding's block: the ids as a `list[int]`.
fn token_block<'py>(py: Python<'py>, units: &[u32]) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyList::new(py, units)?.into_any())
}

/// How a block of units becomes a Python value.
type BlockOf = for<'py> fn(Python<'py>, &[u32]) -> PyResult<Bound<'py, PyAny>>;

/// The finding as a dict of plain values, for JSON and logs.
fn to_dict<'py>(py: Python<'py>, finding: &Finding, block: BlockOf) -> PyResult<Bound<'py, PyDict>> {
    let dict = PyDict::new(py);
    dict.set_item("rule", finding.rule.name())?;
    dict.set_item("period", finding.period)?;
    dict.set_item("block", block(py, &finding.block)?)?;
    dict.set_item("start", finding.start)?;
    dict.set_item("repeats", finding.repeats)?;
    dict.set_item("detected_at", finding.detected_at)?;
    dict.set_item("end", finding.end)?;
    Ok(dict)
}

/// `Class(rule=..., ..., block=<first 40 units>..., ...)`.
fn repr(py: Python<'_>, class: &str, finding: &Finding, block: BlockOf) -> PyResult<String> {
    const PREVIEW: usize = 40;
    let shown = &finding.block[..finding.block.len().min(PREVIEW)];
    let mut preview = block(py, shown)?.repr()?.to_string();
    if finding.block.len() > PREVIEW {
        preview.push_str("...");
    }
    Ok(format!(
        "{class}(rule='{}', period={}, block={preview}, start={}, repeats={}, detected_at={}, end={})",
        finding.rule, finding.period, finding.start, finding.repeats, finding.detected_at, finding.end
    ))
}

#[pymethods]
impl PyFinding {
    #[getter]
    fn rule(&self) -> &'static str {
        self.inner.rule.name()
    }
    #[getter]
    fn period(&self) -> u64 {
        self.inner.period
    }
    #[getter]
    fn block<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        text_block(py, &self.inner.block)
    }
    #[getter]
    fn start(&self) -> u64 {
        self.inner.start
    }
    #[getter]
    fn repeats(&self) -> u64 {
        self.inner.repeats
    }
    #[getter]
    fn detected_at(&self) -> u64 {
        self.inner.detected_at
    }
    #[getter]
    fn end(&self) -> u64 {
        self.inner.end
    }

    /// The finding as a dict of plain values, for JSON and logs.
    pub fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        to_dict(py, &self.inner, text_block)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr(py, "Finding", &self.inner, text_block)
    }
}

#[pymethods]
impl PyTokenFinding {
    #[getter]
    fn rule(&self) -> &'static str {
        self.inner.rule.name()
    }
    #[getter]
    fn period(&self) -> u64 {
        self.inner.period
    }
    #[getter]
    fn block<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        token_block(py, &self.inner.block)
    }
    #[getter]
    fn start(&self) -> u64 {
        self.inner.start
    }
    #[getter]
    fn repeats(&self) -> u64 {
        self.inner.repeats
    }
    #[getter]
    fn detected_at(&self) -> u64 {
        self.inner.detected_at
    }
    #[getter]
    fn end(&self) -> u64 {
        self.inner.end
    }

    /// The finding as a dict of plain values, for JSON and logs.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        to_dict(py, &self.inner, token_block)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        repr(py, "TokenFinding", &self.inner, token_block)
    }
}

/// The core's findings as Python findings of one class.
pub fn wrap<F: From<Finding>>(findings: Vec<Finding>) -> Vec<F> {
    findings.into_iter().map(F::from).collect()
}
