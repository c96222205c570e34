//! `RuleInfo`, a rule's metadata (the core's `Rule::info`), and `RULE_INFO`, every rule's by name
//! in code order: what Python code reads instead of switching on a rule's name.

use pyo3::prelude::*;
use pyo3::types::{PyDict, PyMappingProxy, PyTuple};

use crate::Rule;

/// A rule's metadata: its name, what one copy is, what its findings' `period` counts, the
/// thresholds it reads and what it finds.
#[pyclass(name = "RuleInfo", module = "loopbreak", frozen, eq, hash)]
#[derive(PartialEq, Eq, Hash)]
pub struct PyRuleInfo {
    rule: Rule,
}

#[pymethods]
impl PyRuleInfo {
    /// The rule's name, as `Finding.rule` gives it.
    #[getter]
    fn name(&self) -> &'static str {
        self.rule.name()
    }

    /// What one copy is, and so what `repeats` counts: `"block"` (copies of the block back to
    /// back) or `"line"` (lines; a cycle of lines is a copy, blank lines between copies allowed).
    #[getter]
    fn copy(&self) -> &'static str {
        self.rule.info().copy.name()
    }

    /// What `Finding.period` counts for this rule, in words.
    #[getter]
    fn period(&self) -> &'static str {
        self.rule.info().period
    }

    /// The thresholds the rule reads: `Rules` attributes, in the order of `to_dict()`.
    #[getter]
    fn thresholds<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        PyTuple::new(py, self.rule.info().thresholds)
    }

    /// What the rule finds, in one line.
    #[getter]
    fn description(&self) -> &'static str {
        self.rule.info().description
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let info = self.rule.info();
        let thresholds = self.thresholds(py)?.repr()?;
        Ok(format!("RuleInfo(name='{}', copy='{}', thresholds={thresholds})", info.name, info.copy.name()))
    }
}

/// `RULE_INFO`: a read-only mapping of every rule's name to its `RuleInfo`, in code order.
pub(super) fn rule_info(py: Python<'_>) -> PyResult<Bound<'_, PyMappingProxy>> {
    let by_name = PyDict::new(py);
    for rule in Rule::ALL {
        by_name.set_item(rule.name(), PyRuleInfo { rule })?;
    }
    Ok(PyMappingProxy::new(py, by_name.as_mapping()))
}
