//! The Python binding (`loopbreak._core`): the only file that uses pyo3.
//!
//! Text crosses as code points, so every offset is a Python `str` index. A `str` holding lone
//! surrogates (which UTF-8 cannot encode) is read through `surrogatepass`: each surrogate is one
//! unit like any other code point, and comes back unchanged in blocks and trimmed text.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};

use crate::{scan_str, BlockKind, scan_units, trim_units, Detector, Finding, Removal, Rules, DEFAULT_KEEP, DEFAULT_RULES};

/// Inputs above this many bytes are worked on with the GIL released.
const DETACH_ABOVE_BYTES: usize = 64 * 1024;

/// Text from Python: borrowed UTF-8 when it is valid, code points when it holds surrogates.
enum Text<'a> {
    Utf8(&'a str),
    Units(Vec<u32>),
}

impl Text<'_> {
    fn len_bytes(&self) -> usize {
        match self {
            Text::Utf8(s) => s.len(),
            Text::Units(u) => 4 * u.len(),
        }
    }

    fn to_units(&self) -> Vec<u32> {
        match self {
            Text::Utf8(s) => s.chars().map(u32::from).collect(),
            Text::Units(u) => u.clone(),
        }
    }
}

fn text_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Text<'a>> {
    let Ok(s) = obj.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be str, not {}",
            obj.get_type().name()?
        )));
    };
    match s.to_str() {
        Ok(text) => Ok(Text::Utf8(text)),
        Err(_) => {
            let bytes = s.call_method1("encode", ("utf-8", "surrogatepass"))?;
            Ok(Text::Units(decode_surrogatepass(bytes.cast::<PyBytes>()?.as_bytes())))
        }
    }
}

/// Decodes UTF-8 that may hold encoded surrogates (as Python's `surrogatepass` writes them).
fn decode_surrogatepass(bytes: &[u8]) -> Vec<u32> {
    let mut units = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let b = u32::from(bytes[i]);
        let (unit, len) = match b {
            0x00..=0x7F => (b, 1),
            0xC0..=0xDF => (((b & 0x1F) << 6) | (u32::from(bytes[i + 1]) & 0x3F), 2),
            0xE0..=0xEF => {
                (((b & 0x0F) << 12) | ((u32::from(bytes[i + 1]) & 0x3F) << 6) | (u32::from(bytes[i + 2]) & 0x3F), 3)
            }
            _ => (
                ((b & 0x07) << 18)
                    | ((u32::from(bytes[i + 1]) & 0x3F) << 12)
                    | ((u32::from(bytes[i + 2]) & 0x3F) << 6)
                    | (u32::from(bytes[i + 3]) & 0x3F),
                4,
            ),
        };
        units.push(unit);
        i += len;
    }
    units
}

/// Code points back to a Python `str`, surrogates included.
fn units_to_str<'py>(py: Python<'py>, units: &[u32]) -> PyResult<Bound<'py, PyString>> {
    let chars: Option<String> = units.iter().map(|&u| char::from_u32(u)).collect();
    if let Some(s) = chars {
        return Ok(PyString::new(py, &s));
    }
    let mut bytes = Vec::with_capacity(units.len() * 3);
    for &u in units {
        match char::from_u32(u) {
            Some(ch) => bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
            None => bytes.extend_from_slice(&[0xE0 | (u >> 12) as u8, 0x80 | ((u >> 6) & 0x3F) as u8, 0x80 | (u & 0x3F) as u8]),
        }
    }
    let decoded = PyBytes::new(py, &bytes).call_method1("decode", ("utf-8", "surrogatepass"))?;
    Ok(decoded.cast_into::<PyString>()?)
}

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic cannot leave a detector half-updated in a way that matters more than losing it,
    // and panics are not expected: recover the state rather than poison every later call.
    mutex.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Thresholds of the three rules (see the `Rules` docs for each field and its default).
#[pyclass(name = "Rules", module = "loopbreak", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyRules {
    inner: Rules,
}

fn rule_value(name: &str, value: i64) -> PyResult<u32> {
    u32::try_from(value).map_err(|_| PyValueError::new_err(format!("{name} must be a non-negative int, got {value}")))
}

macro_rules! rules_class {
    ($($field:ident),* $(,)?) => {
        #[pymethods]
        impl PyRules {
            #[new]
            #[pyo3(signature = (*, $($field = i64::from(DEFAULT_RULES.$field)),*))]
            fn new($($field: i64),*) -> PyResult<Self> {
                let inner = Rules { $($field: rule_value(stringify!($field), $field)?),* };
                inner.validate().map_err(|e| PyValueError::new_err(e.0))?;
                Ok(PyRules { inner })
            }

            $(
                #[getter]
                fn $field(&self) -> u32 {
                    self.inner.$field
                }
            )*

            /// The span (units from the start of the first copy) at which `block`, repeated back
            /// to back, becomes a finding.
            fn required_span(&self, block: &Bound<'_, PyAny>) -> PyResult<u64> {
                let units = text_arg(block, "block")?.to_units();
                if units.is_empty() {
                    return Err(PyValueError::new_err("block must not be empty"));
                }
                let period = u32::try_from(units.len()).map_err(|_| PyValueError::new_err("block is too long"))?;
                Ok(self.inner.required_span(period, BlockKind::of(&units)))
            }

            /// How many identical lines in a row make `line` a finding.
            fn required_lines(&self, line: &Bound<'_, PyAny>) -> PyResult<u32> {
                let units = text_arg(line, "line")?.to_units();
                Ok(self.inner.required_lines(BlockKind::of(&units)))
            }

            /// The rules as a dict of field name to value.
            fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
                let dict = PyDict::new(py);
                $(dict.set_item(stringify!($field), self.inner.$field)?;)*
                Ok(dict)
            }

            fn __repr__(&self) -> String {
                let fields: Vec<String> = vec![$(format!("{}={}", stringify!($field), self.inner.$field)),*];
                format!("Rules({})", fields.join(", "))
            }
        }
    };
}

rules_class!(
    max_period,
    max_long_period,
    min_repeats,
    text_span,
    code_min_repeats,
    code_span,
    long_min_repeats,
    min_span,
    single_char_min_span,
    whitespace_min_span,
    min_lines,
    code_min_lines,
);

fn rules_arg(rules: Option<&Bound<'_, PyRules>>) -> Rules {
    rules.map_or(DEFAULT_RULES, |r| r.get().inner)
}

/// One degenerate region, as it stood when its rule first held.
#[pyclass(name = "Finding", module = "loopbreak", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyFinding {
    inner: Finding,
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
    fn block<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyString>> {
        units_to_str(py, &self.inner.block)
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

    /// The finding as a dict of plain values, for JSON and logs.
    fn to_dict<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let dict = PyDict::new(py);
        dict.set_item("rule", self.rule())?;
        dict.set_item("period", self.inner.period)?;
        dict.set_item("block", self.block(py)?)?;
        dict.set_item("start", self.inner.start)?;
        dict.set_item("repeats", self.inner.repeats)?;
        dict.set_item("detected_at", self.inner.detected_at)?;
        Ok(dict)
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        const PREVIEW: usize = 40;
        let block = self.block(py)?;
        let mut preview = block.repr()?.to_string();
        if self.inner.block.len() > PREVIEW {
            let head = units_to_str(py, &self.inner.block[..PREVIEW])?;
            preview = format!("{}...", head.repr()?);
        }
        Ok(format!(
            "Finding(rule='{}', period={}, block={}, start={}, repeats={}, detected_at={})",
            self.rule(),
            self.inner.period,
            preview,
            self.inner.start,
            self.inner.repeats,
            self.inner.detected_at
        ))
    }
}

fn wrap(findings: Vec<Finding>) -> Vec<PyFinding> {
    findings.into_iter().map(|inner| PyFinding { inner }).collect()
}

struct DetectorState {
    detector: Detector,
    findings: Vec<PyFinding>,
}

/// A streaming detector: feed it text deltas as they arrive.
#[pyclass(name = "Detector", module = "loopbreak", frozen)]
pub struct PyDetector {
    state: Mutex<DetectorState>,
}

#[pymethods]
impl PyDetector {
    #[new]
    #[pyo3(signature = (rules = None))]
    fn new(rules: Option<&Bound<'_, PyRules>>) -> Self {
        let detector = Detector::new(rules_arg(rules));
        PyDetector { state: Mutex::new(DetectorState { detector, findings: Vec::new() }) }
    }

    /// Feeds a text delta; returns the first finding whose rule first held inside it, or None.
    fn feed(&self, py: Python<'_>, delta: &Bound<'_, PyAny>) -> PyResult<Option<PyFinding>> {
        let text = text_arg(delta, "delta")?;
        let mut state = lock(&self.state);
        let state = &mut *state;
        let mut found = Vec::new();
        let mut run = |found: &mut Vec<Finding>| match &text {
            Text::Utf8(s) => state.detector.feed_str(s, found),
            Text::Units(u) => state.detector.feed_units(u, found),
        };
        if text.len_bytes() > DETACH_ABOVE_BYTES {
            py.detach(|| run(&mut found));
        } else {
            run(&mut found);
        }
        let new = wrap(found);
        let first = new.first().cloned();
        state.findings.extend(new);
        Ok(first)
    }

    /// The first finding since creation or the last reset, or None.
    #[getter]
    fn finding(&self) -> Option<PyFinding> {
        lock(&self.state).findings.first().cloned()
    }

    /// Every finding so far, in order (one per degenerate region).
    #[getter]
    fn findings(&self) -> Vec<PyFinding> {
        lock(&self.state).findings.clone()
    }

    /// Units (code points) fed since creation or the last reset.
    #[getter]
    fn units_seen(&self) -> u64 {
        lock(&self.state).detector.units_seen()
    }

    #[getter]
    fn rules(&self) -> PyRules {
        PyRules { inner: *lock(&self.state).detector.rules() }
    }

    /// Forgets everything fed so far; the rules stay.
    fn reset(&self) {
        let mut state = lock(&self.state);
        state.detector.reset();
        state.findings.clear();
    }

    fn __repr__(&self) -> String {
        let state = lock(&self.state);
        format!("Detector(units_seen={}, findings={})", state.detector.units_seen(), state.findings.len())
    }
}

/// Every degenerate region of a whole text.
#[pyfunction]
#[pyo3(signature = (text, rules = None))]
fn scan(py: Python<'_>, text: &Bound<'_, PyAny>, rules: Option<&Bound<'_, PyRules>>) -> PyResult<Vec<PyFinding>> {
    let rules = rules_arg(rules);
    let text = text_arg(text, "text")?;
    let run = || match &text {
        Text::Utf8(s) => scan_str(s, &rules),
        Text::Units(u) => scan_units(u, &rules),
    };
    let findings = if text.len_bytes() > DETACH_ABOVE_BYTES { py.detach(run) } else { run() };
    Ok(wrap(findings))
}

/// One region that `trim` shortened.
#[pyclass(name = "Removal", module = "loopbreak", frozen)]
pub struct PyRemoval {
    inner: Removal,
}

#[pymethods]
impl PyRemoval {
    #[getter]
    fn finding(&self) -> PyFinding {
        PyFinding { inner: self.inner.finding.clone() }
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
#[pyo3(signature = (text, keep = DEFAULT_KEEP as i64, rules = None))]
fn trim(py: Python<'_>, text: &Bound<'_, PyAny>, keep: i64, rules: Option<&Bound<'_, PyRules>>) -> PyResult<PyTrimmed> {
    if keep < 1 {
        return Err(PyValueError::new_err(format!("keep must be at least 1, got {keep}")));
    }
    let rules = rules_arg(rules);
    let text = text_arg(text, "text")?;
    let run = || {
        let units = text.to_units();
        trim_units(&units, &rules, keep as u64)
    };
    let trimmed = if text.len_bytes() > DETACH_ABOVE_BYTES { py.detach(run) } else { run() };
    let removals = trimmed
        .removals
        .into_iter()
        .map(|inner| Py::new(py, PyRemoval { inner }))
        .collect::<PyResult<Vec<_>>>()?;
    Ok(PyTrimmed { text: units_to_str(py, &trimmed.units)?.unbind(), removals })
}

#[pymodule]
fn _core(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRules>()?;
    m.add_class::<PyFinding>()?;
    m.add_class::<PyDetector>()?;
    m.add_class::<PyRemoval>()?;
    m.add_class::<PyTrimmed>()?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(trim, m)?)?;
    m.add("DEFAULT_KEEP", DEFAULT_KEEP)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
