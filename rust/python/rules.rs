//! `Rules`: the thresholds, checked on construction.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::input::{text_arg, Int};
use crate::{BlockKind, RuleValues, Rules, RulesError, DEFAULT_RULES};

/// Thresholds of the four rules (see the `Rules` docs for each field and its default).
#[pyclass(name = "Rules", module = "loopbreak", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyRules {
    pub inner: Rules,
}

impl From<RulesError> for PyErr {
    fn from(error: RulesError) -> PyErr {
        PyValueError::new_err(error.0)
    }
}

/// The rules an optional `rules=` argument stands for.
pub fn rules_arg(rules: Option<&Bound<'_, PyRules>>) -> Rules {
    rules.map_or(DEFAULT_RULES, |r| r.get().inner)
}

fn rule_value(name: &str, value: Int) -> PyResult<u32> {
    value.get(0u32).ok_or_else(|| PyValueError::new_err(format!("{name} must be an int in 0..2**32, got {value}")))
}

#[pymethods]
impl PyRules {
    // Python's keyword-only constructor takes one argument per rule.
    #[allow(clippy::too_many_arguments)]
    #[new]
    #[pyo3(signature = (
        *,
        max_period = Int::from(DEFAULT_RULES.max_period),
        max_long_period = Int::from(DEFAULT_RULES.max_long_period),
        min_repeats = Int::from(DEFAULT_RULES.min_repeats),
        text_span = Int::from(DEFAULT_RULES.text_span),
        code_min_repeats = Int::from(DEFAULT_RULES.code_min_repeats),
        code_span = Int::from(DEFAULT_RULES.code_span),
        long_min_repeats = Int::from(DEFAULT_RULES.long_min_repeats),
        min_span = Int::from(DEFAULT_RULES.min_span),
        code_min_span = Int::from(DEFAULT_RULES.code_min_span),
        single_char_min_span = Int::from(DEFAULT_RULES.single_char_min_span),
        whitespace_min_span = Int::from(DEFAULT_RULES.whitespace_min_span),
        table_span = Int::from(DEFAULT_RULES.table_span),
        min_lines = Int::from(DEFAULT_RULES.min_lines),
        code_min_lines = Int::from(DEFAULT_RULES.code_min_lines),
        counter_min_lines = Int::from(DEFAULT_RULES.counter_min_lines),
        counter_span = Int::from(DEFAULT_RULES.counter_span),
        code_counter_min_lines = Int::from(DEFAULT_RULES.code_counter_min_lines),
        code_counter_span = Int::from(DEFAULT_RULES.code_counter_span),
        data_counter_min_lines = Int::from(DEFAULT_RULES.data_counter_min_lines),
        payload_span = Int::from(DEFAULT_RULES.payload_span),
    ))]
    fn new(
        max_period: Int,
        max_long_period: Int,
        min_repeats: Int,
        text_span: Int,
        code_min_repeats: Int,
        code_span: Int,
        long_min_repeats: Int,
        min_span: Int,
        code_min_span: Int,
        single_char_min_span: Int,
        whitespace_min_span: Int,
        table_span: Int,
        min_lines: Int,
        code_min_lines: Int,
        counter_min_lines: Int,
        counter_span: Int,
        code_counter_min_lines: Int,
        code_counter_span: Int,
        data_counter_min_lines: Int,
        payload_span: Int,
    ) -> PyResult<Self> {
        let values = RuleValues {
            max_period: rule_value("max_period", max_period)?,
            max_long_period: rule_value("max_long_period", max_long_period)?,
            min_repeats: rule_value("min_repeats", min_repeats)?,
            text_span: rule_value("text_span", text_span)?,
            code_min_repeats: rule_value("code_min_repeats", code_min_repeats)?,
            code_span: rule_value("code_span", code_span)?,
            long_min_repeats: rule_value("long_min_repeats", long_min_repeats)?,
            min_span: rule_value("min_span", min_span)?,
            code_min_span: rule_value("code_min_span", code_min_span)?,
            single_char_min_span: rule_value("single_char_min_span", single_char_min_span)?,
            whitespace_min_span: rule_value("whitespace_min_span", whitespace_min_span)?,
            table_span: rule_value("table_span", table_span)?,
            min_lines: rule_value("min_lines", min_lines)?,
            code_min_lines: rule_value("code_min_lines", code_min_lines)?,
            counter_min_lines: rule_value("counter_min_lines", counter_min_lines)?,
            counter_span: rule_value("counter_span", counter_span)?,
            code_counter_min_lines: rule_value("code_counter_min_lines", code_counter_min_lines)?,
            code_counter_span: rule_value("code_counter_span", code_counter_span)?,
            data_counter_min_lines: rule_value("data_counter_min_lines", data_counter_min_lines)?,
            payload_span: rule_value("payload_span", payload_span)?,
        };
        Ok(PyRules { inner: Rules::new(values)? })
    }

    /// The preset for scanning arbitrary files: no finding on a full install's text files
    /// (`CONSERVATIVE_RULES` in rules.rs).
    #[staticmethod]
    fn conservative() -> Self {
        PyRules { inner: crate::CONSERVATIVE_RULES }
    }

    /// The preset for token ids, sized and tuned in tokens (`TOKEN_RULES` in rules.rs).
    #[staticmethod]
    fn for_tokens() -> Self {
        PyRules { inner: crate::TOKEN_RULES }
    }

    #[getter]
    fn max_period(&self) -> u32 {
        self.inner.max_period
    }
    #[getter]
    fn max_long_period(&self) -> u32 {
        self.inner.max_long_period
    }
    #[getter]
    fn min_repeats(&self) -> u32 {
        self.inner.min_repeats
    }
    #[getter]
    fn text_span(&self) -> u32 {
        self.inner.text_span
    }
    #[getter]
    fn code_min_repeats(&self) -> u32 {
        self.inner.code_min_repeats
    }
    #[getter]
    fn code_span(&self) -> u32 {
        self.inner.code_span
    }
    #[getter]
    fn long_min_repeats(&self) -> u32 {
        self.inner.long_min_repeats
    }
    #[getter]
    fn min_span(&self) -> u32 {
        self.inner.min_span
    }
    #[getter]
    fn code_min_span(&self) -> u32 {
        self.inner.code_min_span
    }
    #[getter]
    fn single_char_min_span(&self) -> u32 {
        self.inner.single_char_min_span
    }
    #[getter]
    fn whitespace_min_span(&self) -> u32 {
        self.inner.whitespace_min_span
    }
    #[getter]
    fn table_span(&self) -> u32 {
        self.inner.table_span
    }
    #[getter]
    fn min_lines(&self) -> u32 {
        self.inner.min_lines
    }
    #[getter]
    fn code_min_lines(&self) -> u32 {
        self.inner.code_min_lines
    }
    #[getter]
    fn counter_min_lines(&self) -> u32 {
        self.inner.counter_min_lines
    }
    #[getter]
    fn counter_span(&self) -> u32 {
        self.inner.counter_span
    }
    #[getter]
    fn code_counter_min_lines(&self) -> u32 {
        self.inner.code_counter_min_lines
    }
    #[getter]
    fn code_counter_span(&self) -> u32 {
        self.inner.code_counter_span
    }
    #[getter]
    fn data_counter_min_lines(&self) -> u32 {
        self.inner.data_counter_min_lines
    }
    #[getter]
    fn payload_span(&self) -> u32 {
        self.inner.payload_span
    }

    /// The span (units from the start of the first copy) at which `block`, repeated back
    /// to back (at the start of a text, so with nothing before it), becomes a finding.
    fn required_span(&self, block: &Bound<'_, PyAny>) -> PyResult<u64> {
        let units = text_arg(block, "block")?.to_units();
        if units.is_empty() {
            return Err(PyValueError::new_err("block must not be empty"));
        }
        u32::try_from(units.len()).map_err(|_| PyValueError::new_err("block is too long"))?;
        Ok(self.inner.run_span(&units, BlockKind::of_block(&units)))
    }

    /// How many identical lines in a row make `line` a finding.
    fn required_lines(&self, line: &Bound<'_, PyAny>) -> PyResult<u64> {
        let units = text_arg(line, "line")?.to_units();
        let len = units.iter().rposition(|&u| !crate::classes::is_whitespace(u)).map_or(0, |i| i + 1);
        Ok(self.inner.required_lines(BlockKind::of_line(&units[..len]), len as u64))
    }

    /// The rules as a dict of field name to value.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        for (name, value) in self.inner.named_values() {
            dict.set_item(name, value)?;
        }
        Ok(dict)
    }

    fn __repr__(&self) -> String {
        let fields: Vec<String> =
            self.inner.named_values().iter().map(|(name, value)| format!("{name}={value}")).collect();
        format!("Rules({})", fields.join(", "))
    }
}
