//! The Python binding (`loopbreak._core`): the only file that uses pyo3.
//!
//! Text crosses as code points, so every offset is a Python `str` index. A `str` holding lone
//! surrogates (which UTF-8 cannot encode) is read through `surrogatepass`: each surrogate is one
//! unit like any other code point, and comes back unchanged in blocks and trimmed text.

use std::sync::{Mutex, MutexGuard};

use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::buffer::{PyBuffer, PyUntypedBuffer};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::string::PyStringData;
use pyo3::types::{PyByteArray, PyBytes, PyDict, PyInt, PyList, PyString, PyTuple};

use crate::detector::scan_stored;
use crate::{map_parallel, BlockKind, Rule, StreamSet, trim_units, Detector, Finding, Removal, Rules, DEFAULT_KEEP, DEFAULT_RULES, TOKEN_RULES};

/// Inputs above this many bytes are worked on with the GIL released.
const DETACH_ABOVE_BYTES: usize = 64 * 1024;

/// Units from Python. A `str` is borrowed as CPython stores it, one, two or four bytes per code
/// point (lone surrogates included), so it is neither encoded nor decoded on the way in; token
/// ids are copied from their list or buffer.
enum Text<'a> {
    Bytes(&'a [u8]),
    Narrow(&'a [u16]),
    Wide(&'a [u32]),
    Ids(Vec<u32>),
}

/// Calls `$body` with `$units` bound to the text's units, whatever their width.
macro_rules! with_units {
    ($text:expr, $units:ident => $body:expr) => {
        match $text {
            Text::Bytes($units) => $body,
            Text::Narrow($units) => $body,
            Text::Wide($units) => $body,
            Text::Ids($units) => $body,
        }
    };
}

impl Text<'_> {
    fn len_bytes(&self) -> usize {
        with_units!(self, units => std::mem::size_of_val(&units[..]))
    }

    fn to_units(&self) -> Vec<u32> {
        with_units!(self, units => units.iter().map(|&unit| u32::from(unit)).collect())
    }

    fn scan(&self, rules: &Rules) -> Vec<Finding> {
        with_units!(self, units => scan_stored(units, rules))
    }
}

fn text_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Text<'a>> {
    let Ok(s) = obj.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!(
            "{what} must be str, not {}",
            obj.get_type().name()?
        )));
    };
    // SAFETY: PyO3 reads the str's storage kind from a C bitfield laid out as on x86-64, where
    // PyO3 tests it and where this package is built and tested. The data stays valid while
    // `obj` is borrowed: a str is immutable.
    Ok(match unsafe { s.data() }? {
        PyStringData::Ucs1(units) => Text::Bytes(units),
        PyStringData::Ucs2(units) => Text::Narrow(units),
        PyStringData::Ucs4(units) => Text::Wide(units),
    })
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

/// Locks a detector's state. Waiting happens with the GIL released: a thread that holds the lock
/// may be working detached and needs the GIL back to finish. A poisoned lock (a panic, not
/// expected) is recovered rather than failing every later call.
fn lock<'a, T>(py: Python<'_>, mutex: &'a Mutex<T>) -> MutexGuard<'a, T> {
    mutex.lock_py_attached(py).unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Thresholds of the three rules (see the `Rules` docs for each field and its default).
#[pyclass(name = "Rules", module = "loopbreak", frozen, eq)]
#[derive(Clone, PartialEq)]
pub struct PyRules {
    inner: Rules,
}

fn rule_value(name: &str, value: i128) -> PyResult<u32> {
    u32::try_from(value).map_err(|_| PyValueError::new_err(format!("{name} must be an int in 0..2**32, got {value}")))
}

macro_rules! rules_class {
    ($($field:ident),* $(,)?) => {
        #[pymethods]
        impl PyRules {
            #[new]
            #[pyo3(signature = (*, $($field = i128::from(DEFAULT_RULES.$field)),*))]
            fn new($($field: i128),*) -> PyResult<Self> {
                let inner = Rules { $($field: rule_value(stringify!($field), $field)?),* };
                inner.validate().map_err(|e| PyValueError::new_err(e.0))?;
                Ok(PyRules { inner })
            }

            /// The preset for token ids, sized and tuned in tokens (`TOKEN_RULES` in rules.rs).
            #[staticmethod]
            fn for_tokens() -> Self {
                PyRules { inner: TOKEN_RULES }
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
    code_min_span,
    single_char_min_span,
    whitespace_min_span,
    min_lines,
    code_min_lines,
);

fn rules_arg(rules: Option<&Bound<'_, PyRules>>) -> Rules {
    rules.map_or(DEFAULT_RULES, |r| r.get().inner)
}

/// The Python class of a finding: `Finding` (text, `block` is a `str`) or `TokenFinding`
/// (token ids, `block` is a `list[int]`); everything else is the same.
macro_rules! finding_class {
    ($class:ident, $name:literal, $block:ident) => {
        #[pyclass(name = $name, module = "loopbreak", frozen, eq, hash)]
        #[derive(Clone, PartialEq, Eq, Hash)]
        pub struct $class {
            inner: Finding,
        }

        impl From<Finding> for $class {
            fn from(inner: Finding) -> Self {
                $class { inner }
            }
        }

        #[pymethods]
        impl $class {
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
                $block(py, &self.inner.block)
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
                let shown = &self.inner.block[..self.inner.block.len().min(PREVIEW)];
                let mut preview = $block(py, shown)?.repr()?.to_string();
                if self.inner.block.len() > PREVIEW {
                    preview.push_str("...");
                }
                Ok(format!(
                    "{}(rule='{}', period={}, block={}, start={}, repeats={}, detected_at={})",
                    $name,
                    self.rule(),
                    self.inner.period,
                    preview,
                    self.inner.start,
                    self.inner.repeats,
                    self.inner.detected_at
                ))
            }
        }
    };
}

fn text_block<'py>(py: Python<'py>, units: &[u32]) -> PyResult<Bound<'py, PyAny>> {
    Ok(units_to_str(py, units)?.into_any())
}

fn token_block<'py>(py: Python<'py>, units: &[u32]) -> PyResult<Bound<'py, PyAny>> {
    Ok(PyList::new(py, units)?.into_any())
}

finding_class!(PyFinding, "Finding", text_block);
finding_class!(PyTokenFinding, "TokenFinding", token_block);

fn wrap<F: From<Finding>>(findings: Vec<Finding>) -> Vec<F> {
    findings.into_iter().map(F::from).collect()
}

impl Text<'_> {
    /// Feeds the units to `detector`, with the GIL released when there are many.
    fn feed(&self, py: Python<'_>, detector: &mut Detector) -> Vec<Finding> {
        let mut found = Vec::new();
        let mut run = || with_units!(self, units => detector.feed_stored(units, &mut found));
        if self.len_bytes() > DETACH_ABOVE_BYTES {
            py.detach(run);
        } else {
            run();
        }
        found
    }
}

/// Token ids from a list of ints or a 1-D buffer (numpy array, `array.array`) of unsigned or
/// signed integers; each must fit in 32 bits unsigned.
fn tokens_arg(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u32>> {
    fn id(item: Bound<'_, PyAny>) -> PyResult<u32> {
        let out_of_range = || PyValueError::new_err(format!("token ids must be in 0..2**32, got {item}"));
        match item.extract::<i128>() {
            Ok(value) => u32::try_from(value).map_err(|_| out_of_range()),
            Err(_) if item.is_instance_of::<PyInt>() => Err(out_of_range()),
            Err(error) => Err(error),
        }
    }
    if let Ok(list) = obj.cast::<PyList>() {
        let ids = list.iter().map(id).collect::<PyResult<Vec<u32>>>()?;
        return Ok(ids);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        let ids = tuple.iter().map(id).collect::<PyResult<Vec<u32>>>()?;
        return Ok(ids);
    }
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
        return Err(PyTypeError::new_err("tokens must be ids (a list of int or an integer array), not bytes"));
    }
    let Ok(buffer) = PyUntypedBuffer::get(obj) else {
        return Err(PyTypeError::new_err(format!(
            "tokens must be a list of int or a 1-D integer array, not {}",
            obj.get_type().name()?
        )));
    };
    if buffer.dimensions() != 1 {
        return Err(PyValueError::new_err(format!("tokens must be 1-D, got {} dimensions", buffer.dimensions())));
    }
    macro_rules! typed {
        ($($t:ty),*) => {$(
            if let Ok(typed) = buffer.as_typed::<$t>() {
                let ids = typed
                    .to_vec(obj.py())?
                    .into_iter()
                    .map(|v| u32::try_from(v).map_err(|_| PyValueError::new_err(format!("token ids must be in 0..2**32, got {v}"))))
                    .collect::<PyResult<Vec<u32>>>()?;
                return Ok(ids);
            }
        )*};
    }
    typed!(u32, i64, i32, u64, u16, i16, u8, i8);
    Err(PyTypeError::new_err(format!(
        "tokens must hold integers (e.g. uint32 or int64), got buffer format '{}'",
        buffer.format().to_string_lossy()
    )))
}

/// The Python class of a streaming detector: `Detector` (text deltas) or `TokenDetector` (token
/// ids); they differ in what `feed` takes and what findings they return.
macro_rules! detector_class {
    ($class:ident, $name:literal, $finding:ident, $input:expr) => {
        #[pyclass(name = $name, module = "loopbreak", frozen)]
        pub struct $class {
            state: Mutex<(Detector, Vec<$finding>)>,
        }

        #[pymethods]
        impl $class {
            #[new]
            #[pyo3(signature = (rules = None))]
            fn new(rules: Option<&Bound<'_, PyRules>>) -> Self {
                $class { state: Mutex::new((Detector::new(rules_arg(rules)), Vec::new())) }
            }

            /// Feeds a delta; returns the first finding whose rule first held inside it, or None.
            fn feed(&self, py: Python<'_>, delta: &Bound<'_, PyAny>) -> PyResult<Option<$finding>> {
                let input = ($input)(delta)?;
                let mut state = lock(py, &self.state);
                let (detector, findings) = &mut *state;
                let new: Vec<$finding> = wrap(input.feed(py, detector));
                let first = new.first().cloned();
                findings.extend(new);
                Ok(first)
            }

            /// The first finding since creation or the last reset, or None.
            #[getter]
            fn finding(&self, py: Python<'_>) -> Option<$finding> {
                lock(py, &self.state).1.first().cloned()
            }

            /// Every finding so far, in order (one per degenerate region).
            #[getter]
            fn findings(&self, py: Python<'_>) -> Vec<$finding> {
                lock(py, &self.state).1.clone()
            }

            /// Units fed since creation or the last reset.
            #[getter]
            fn units_seen(&self, py: Python<'_>) -> u64 {
                lock(py, &self.state).0.units_seen()
            }

            #[getter]
            fn rules(&self, py: Python<'_>) -> PyRules {
                PyRules { inner: *lock(py, &self.state).0.rules() }
            }

            /// Forgets everything fed so far; the rules stay.
            fn reset(&self, py: Python<'_>) {
                let mut state = lock(py, &self.state);
                state.0.reset();
                state.1.clear();
            }

            fn __repr__(&self, py: Python<'_>) -> String {
                let state = lock(py, &self.state);
                format!("{}(units_seen={}, findings={})", $name, state.0.units_seen(), state.1.len())
            }
        }
    };
}

detector_class!(PyDetector, "Detector", PyFinding, |delta| text_arg(delta, "delta"));
detector_class!(PyTokenDetector, "TokenDetector", PyTokenFinding, |tokens| tokens_arg(tokens).map(Text::Ids));

/// Many token streams, stepped together: one call per decode step for the whole batch.
#[pyclass(name = "TokenStreams", module = "loopbreak", frozen)]
pub struct PyTokenStreams {
    state: Mutex<StreamSet>,
}

fn slots_arg(obj: &Bound<'_, PyAny>, set: &StreamSet) -> PyResult<Vec<usize>> {
    let ids = tokens_arg(obj)?;
    let slots: Vec<usize> = ids.into_iter().map(|id| id as usize).collect();
    set.check_slots(&slots).map_err(|e| PyValueError::new_err(format!("no stream in slot {}", e.0)))?;
    Ok(slots)
}

#[pymethods]
impl PyTokenStreams {
    #[new]
    #[pyo3(signature = (rules = None))]
    fn new(rules: Option<&Bound<'_, PyRules>>) -> Self {
        PyTokenStreams { state: Mutex::new(StreamSet::new(rules_arg(rules))) }
    }

    /// Starts a stream; returns its slot (a freed slot is reused).
    fn add(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).add()
    }

    /// Ends the stream in `slot`. Raises ``ValueError`` if there is none.
    fn remove(&self, py: Python<'_>, slot: usize) -> PyResult<()> {
        lock(py, &self.state).remove(slot).map_err(|e| PyValueError::new_err(format!("no stream in slot {}", e.0)))
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).len()
    }

    /// Feeds `tokens[i]` to the stream in `slots[i]` for every i (lists or 1-D integer arrays of
    /// equal length); returns the slots whose stream produced a finding in this step.
    fn step(&self, py: Python<'_>, slots: &Bound<'_, PyAny>, tokens: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let mut set = lock(py, &self.state);
        let slots = slots_arg(slots, &set)?;
        let ids = tokens_arg(tokens)?;
        if ids.len() != slots.len() {
            return Err(PyValueError::new_err(format!(
                "slots and tokens differ in length: {} and {}",
                slots.len(),
                ids.len()
            )));
        }
        let mut fired = Vec::new();
        let set = &mut *set;
        let mut run = || set.step(&slots, &ids, |slot, _| fired.push(slot));
        if slots.len() * 64 > DETACH_ABOVE_BYTES {
            py.detach(run);
        } else {
            run();
        }
        Ok(fired)
    }

    /// The first finding of the stream in `slot`, or None.
    fn finding(&self, py: Python<'_>, slot: usize) -> PyResult<Option<PyTokenFinding>> {
        let set = lock(py, &self.state);
        let detector = set.detector(slot).map_err(|e| PyValueError::new_err(format!("no stream in slot {}", e.0)))?;
        Ok(detector.finding().cloned().map(PyTokenFinding::from))
    }

    /// Units fed to the stream in `slot`.
    fn units_seen(&self, py: Python<'_>, slot: usize) -> PyResult<u64> {
        let set = lock(py, &self.state);
        let detector = set.detector(slot).map_err(|e| PyValueError::new_err(format!("no stream in slot {}", e.0)))?;
        Ok(detector.units_seen())
    }
}

/// Every degenerate region of a whole text.
#[pyfunction]
#[pyo3(signature = (text, rules = None))]
fn scan(py: Python<'_>, text: &Bound<'_, PyAny>, rules: Option<&Bound<'_, PyRules>>) -> PyResult<Vec<PyFinding>> {
    let rules = rules_arg(rules);
    let text = text_arg(text, "text")?;
    let run = || text.scan(&rules);
    let findings = if text.len_bytes() > DETACH_ABOVE_BYTES { py.detach(run) } else { run() };
    Ok(wrap(findings))
}

fn threads_arg(threads: Option<i64>) -> PyResult<Option<usize>> {
    threads
        .map(|n| usize::try_from(n).ok().filter(|&n| n >= 1).ok_or_else(|| PyValueError::new_err(format!("threads must be at least 1, got {n}"))))
        .transpose()
}

/// The findings of every text, in order, scanned on all cores (or `threads`) with the GIL released.
#[pyfunction]
#[pyo3(signature = (texts, rules = None, threads = None))]
fn scan_many(
    py: Python<'_>,
    texts: &Bound<'_, PyAny>,
    rules: Option<&Bound<'_, PyRules>>,
    threads: Option<i64>,
) -> PyResult<Vec<Vec<PyFinding>>> {
    let rules = rules_arg(rules);
    let threads = threads_arg(threads)?;
    if texts.is_instance_of::<PyString>() {
        return Err(PyTypeError::new_err("texts must be an iterable of str, not a single str"));
    }
    let items: Vec<Bound<'_, PyAny>> = texts.try_iter()?.collect::<PyResult<_>>()?;
    let texts = items.iter().map(|item| text_arg(item, "each text")).collect::<PyResult<Vec<Text<'_>>>>()?;
    let found = py.detach(|| {
        map_parallel(&texts, |text| text.scan(&rules), threads)
    });
    Ok(found.into_iter().map(wrap).collect())
}

/// `scan_many` over an Arrow-style string column given as its UTF-8 `data` buffer and its
/// `offsets` buffer (int32 or int64, one more than the rows): returns the findings as columns
/// of little-endian int64 bytes (row, rule, period, start, repeats, detected_at), rule coded as
/// 0 periodic_run, 1 long_block, 2 identical_lines.
#[pyfunction]
#[pyo3(signature = (data, offsets, rules = None, threads = None))]
fn scan_utf8_columns<'py>(
    py: Python<'py>,
    data: &Bound<'py, PyAny>,
    offsets: &Bound<'py, PyAny>,
    rules: Option<&Bound<'py, PyRules>>,
    threads: Option<i64>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let rules = rules_arg(rules);
    let threads = threads_arg(threads)?;
    let data = PyBuffer::<u8>::get(data)?.to_vec(py)?;
    let ids = tokens_arg(offsets).or_else(|_| -> PyResult<Vec<u32>> {
        let wide = PyBuffer::<i64>::get(offsets)?.to_vec(py)?;
        let narrowed = wide.iter().map(|&o| u32::try_from(o)).collect::<Result<Vec<u32>, _>>();
        narrowed.map_err(|_| PyValueError::new_err("offsets beyond 4 GiB are not supported"))
    })?;
    let bounds: Vec<(usize, usize)> = ids.windows(2).map(|w| (w[0] as usize, w[1] as usize)).collect();
    if bounds.iter().any(|&(a, b)| a > b || b > data.len()) {
        return Err(PyValueError::new_err("offsets must be non-decreasing and within data"));
    }
    let rows: Vec<&str> = bounds
        .iter()
        .map(|&(a, b)| std::str::from_utf8(&data[a..b]))
        .collect::<Result<_, _>>()
        .map_err(|e| PyValueError::new_err(format!("a row is not valid UTF-8: {e}")))?;
    let found = py.detach(|| crate::scan_many(&rows, &rules, threads));
    let mut columns: [Vec<u8>; 6] = Default::default();
    for (row, findings) in found.iter().enumerate() {
        for f in findings {
            let rule = match f.rule {
                Rule::PeriodicRun => 0,
                Rule::LongBlock => 1,
                Rule::IdenticalLines => 2,
            };
            for (column, value) in columns.iter_mut().zip([row as i64, rule, f.period as i64, f.start as i64, f.repeats as i64, f.detected_at as i64]) {
                column.extend_from_slice(&value.to_le_bytes());
            }
        }
    }
    Ok(columns.iter().map(|c| PyBytes::new(py, c)).collect())
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
#[pyo3(signature = (text, keep = i128::from(DEFAULT_KEEP), rules = None))]
fn trim(py: Python<'_>, text: &Bound<'_, PyAny>, keep: i128, rules: Option<&Bound<'_, PyRules>>) -> PyResult<PyTrimmed> {
    let keep = u64::try_from(keep)
        .ok()
        .filter(|&k| k >= 1)
        .ok_or_else(|| PyValueError::new_err(format!("keep must be in 1..2**64, got {keep}")))?;
    let rules = rules_arg(rules);
    let text = text_arg(text, "text")?;
    let run = || {
        let units = text.to_units();
        trim_units(&units, &rules, keep)
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
    m.add_class::<PyTokenFinding>()?;
    m.add_class::<PyTokenDetector>()?;
    m.add_class::<PyTokenStreams>()?;
    m.add_function(wrap_pyfunction!(scan_many, m)?)?;
    m.add_function(wrap_pyfunction!(scan_utf8_columns, m)?)?;
    m.add_class::<PyRemoval>()?;
    m.add_class::<PyTrimmed>()?;
    m.add_function(wrap_pyfunction!(scan, m)?)?;
    m.add_function(wrap_pyfunction!(trim, m)?)?;
    m.add("DEFAULT_KEEP", DEFAULT_KEEP)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
