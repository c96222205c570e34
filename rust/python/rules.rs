//! `Rules`: the thresholds, checked on construction; its constructor and getters come from the
//! table of thresholds (`crate::thresholds`), one per row.

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;

use super::input::{text_arg, Int};
use crate::{BlockClass, RuleValues, Rules, RulesError, DEFAULT_RULES};

/// Thresholds of every rule (see the `Rules` docs for each field and its default).
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

/// Makes the class's one `#[pymethods]` block from the rows of the table of thresholds
/// (`crate::thresholds`): the keyword-only constructor, one argument per threshold with its
/// default from `DEFAULT_RULES`, checked in the order of the fields; a getter per threshold; and
/// the class's other methods, handed over as `$methods`.
macro_rules! rules_pymethods {
    (
        ({ $($methods:tt)* })
        $( $(#[doc = $doc:literal])* $name:ident: u32 { $($row:tt)* } )*
    ) => {
        #[pymethods]
        impl PyRules {
            // Python's keyword-only constructor takes one argument per rule.
            #[allow(clippy::too_many_arguments)]
            #[new]
            #[pyo3(signature = (*, $($name = Int::from(DEFAULT_RULES.$name)),*))]
            fn new($($name: Int),*) -> PyResult<Self> {
                let values = RuleValues { $($name: rule_value(stringify!($name), $name)?,)* };
                Ok(PyRules { inner: Rules::new(values)? })
            }

            $(
                #[getter]
                fn $name(&self) -> u32 {
                    self.inner.$name
                }
            )*

            $($methods)*
        }
    };
}

crate::thresholds::with_thresholds!(rules_pymethods {
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

    /// The span (units from the start of the first copy) at which `block`, repeated back
    /// to back (at the start of a text, so with nothing before it), becomes a finding.
    fn required_span(&self, block: &Bound<'_, PyAny>) -> PyResult<u64> {
        let units = text_arg(block, "block")?.to_units();
        if units.is_empty() {
            return Err(PyValueError::new_err("block must not be empty"));
        }
        u32::try_from(units.len()).map_err(|_| PyValueError::new_err("block is too long"))?;
        Ok(self.inner.run_span(&units, BlockClass::of_block(&units)))
    }

    /// How many identical lines in a row make `line` a finding.
    fn required_lines(&self, line: &Bound<'_, PyAny>) -> PyResult<u64> {
        let units = text_arg(line, "line")?.to_units();
        let len = units.iter().rposition(|&u| !crate::classes::is_whitespace(u)).map_or(0, |i| i + 1);
        Ok(self.inner.required_lines(BlockClass::of_line(&units[..len]), len as u64))
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
});
