//! The streaming objects: `Detector` (text deltas), `TokenDetector` (token ids) and
//! `TokenStreams` (many token streams stepped together). Each is frozen and keeps its state
//! behind a `Mutex`, so every method takes `&self` and any thread may call it.

use std::sync::Mutex;

use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

use super::findings::{wrap, PyFinding, PyTokenFinding};
use super::input::{ids_arg, lock, text_arg, Ids, Int, Text, DETACH_ABOVE_BYTES, TOKENS};
use super::rules::{rules_arg, PyRules};
use crate::{Detector, Finding, NoSuchStream, Rules, StreamSet};

impl From<NoSuchStream> for PyErr {
    fn from(error: NoSuchStream) -> PyErr {
        PyValueError::new_err(format!("no stream in slot {}", error.0))
    }
}

/// What a `Detector` or a `TokenDetector` holds: the core detector and every finding so far.
struct Stream {
    detector: Detector,
    findings: Vec<Finding>,
}

impl Stream {
    fn new(rules: Rules) -> Mutex<Stream> {
        Mutex::new(Stream { detector: Detector::new(rules), findings: Vec::new() })
    }

    /// Feeds the input; returns the first finding whose rule first held inside it.
    fn feed(&mut self, py: Python<'_>, input: &Text<'_>) -> Option<Finding> {
        let new = input.feed(py, &mut self.detector);
        let first = new.first().cloned();
        self.findings.extend(new);
        first
    }

    fn reset(&mut self) {
        self.detector.reset();
        self.findings.clear();
    }

    fn repr(&self, class: &str) -> String {
        format!("{class}(units_seen={}, findings={})", self.detector.units_seen(), self.findings.len())
    }
}

#[pyclass(name = "Detector", module = "loopbreak", frozen)]
pub struct PyDetector {
    state: Mutex<Stream>,
}

#[pymethods]
impl PyDetector {
    #[new]
    #[pyo3(signature = (rules = None))]
    fn new(rules: Option<&Bound<'_, PyRules>>) -> Self {
        PyDetector { state: Stream::new(rules_arg(rules)) }
    }

    /// Feeds a delta; returns the first finding whose rule first held inside it, or None.
    fn feed(&self, py: Python<'_>, delta: &Bound<'_, PyAny>) -> PyResult<Option<PyFinding>> {
        let input = text_arg(delta, "delta")?;
        Ok(lock(py, &self.state).feed(py, &input).map(PyFinding::from))
    }

    /// The first finding since creation or the last reset, or None.
    #[getter]
    fn finding(&self, py: Python<'_>) -> Option<PyFinding> {
        lock(py, &self.state).findings.first().cloned().map(PyFinding::from)
    }

    /// Every finding so far, in order (one per degenerate region).
    #[getter]
    fn findings(&self, py: Python<'_>) -> Vec<PyFinding> {
        wrap(lock(py, &self.state).findings.clone())
    }

    /// Units fed since creation or the last reset.
    #[getter]
    fn units_seen(&self, py: Python<'_>) -> u64 {
        lock(py, &self.state).detector.units_seen()
    }

    #[getter]
    fn rules(&self, py: Python<'_>) -> PyRules {
        PyRules { inner: *lock(py, &self.state).detector.rules() }
    }

    /// Forgets everything fed so far; the rules stay.
    fn reset(&self, py: Python<'_>) {
        lock(py, &self.state).reset();
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        lock(py, &self.state).repr("Detector")
    }
}

#[pyclass(name = "TokenDetector", module = "loopbreak", frozen)]
pub struct PyTokenDetector {
    state: Mutex<Stream>,
}

#[pymethods]
impl PyTokenDetector {
    #[new]
    #[pyo3(signature = (rules = None))]
    fn new(rules: Option<&Bound<'_, PyRules>>) -> Self {
        PyTokenDetector { state: Stream::new(rules_arg(rules)) }
    }

    /// Feeds token ids; returns the first finding whose rule first held among them, or None.
    fn feed(&self, py: Python<'_>, tokens: &Bound<'_, PyAny>) -> PyResult<Option<PyTokenFinding>> {
        let input = Text::Owned(ids_arg(tokens, &TOKENS)?);
        Ok(lock(py, &self.state).feed(py, &input).map(PyTokenFinding::from))
    }

    /// The first finding since creation or the last reset, or None.
    #[getter]
    fn finding(&self, py: Python<'_>) -> Option<PyTokenFinding> {
        lock(py, &self.state).findings.first().cloned().map(PyTokenFinding::from)
    }

    /// Every finding so far, in order (one per degenerate region).
    #[getter]
    fn findings(&self, py: Python<'_>) -> Vec<PyTokenFinding> {
        wrap(lock(py, &self.state).findings.clone())
    }

    /// Units fed since creation or the last reset.
    #[getter]
    fn units_seen(&self, py: Python<'_>) -> u64 {
        lock(py, &self.state).detector.units_seen()
    }

    #[getter]
    fn rules(&self, py: Python<'_>) -> PyRules {
        PyRules { inner: *lock(py, &self.state).detector.rules() }
    }

    /// Forgets everything fed so far; the rules stay.
    fn reset(&self, py: Python<'_>) {
        lock(py, &self.state).reset();
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        lock(py, &self.state).repr("TokenDetector")
    }
}

/// Many token streams, stepped together: one call per decode step for the whole batch.
#[pyclass(name = "TokenStreams", module = "loopbreak", frozen)]
pub struct PyTokenStreams {
    state: Mutex<StreamSet>,
}

/// Slot numbers from a list or buffer, each checked to hold a stream of `set`.
fn slots_arg(obj: &Bound<'_, PyAny>, set: &StreamSet) -> PyResult<Vec<usize>> {
    let slots: Vec<usize> =
        ids_arg(obj, &Ids { name: "slots", item: "slots" })?.into_iter().map(|id| id as usize).collect();
    set.check_slots(&slots)?;
    Ok(slots)
}

/// One slot number: an int that is not a slot number at all (negative, huge) holds no stream
/// either.
fn slot_arg(slot: &Int) -> PyResult<usize> {
    slot.get(0usize).ok_or_else(|| PyValueError::new_err(format!("no stream in slot {slot}")))
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
    fn remove(&self, py: Python<'_>, slot: Int) -> PyResult<()> {
        Ok(lock(py, &self.state).remove(slot_arg(&slot)?)?)
    }

    fn __len__(&self, py: Python<'_>) -> usize {
        lock(py, &self.state).len()
    }

    /// Feeds `tokens[i]` to the stream in `slots[i]` for every i (lists or 1-D integer arrays of
    /// equal length); returns the slots whose stream produced a finding in this step.
    fn step(&self, py: Python<'_>, slots: &Bound<'_, PyAny>, tokens: &Bound<'_, PyAny>) -> PyResult<Vec<usize>> {
        let mut set = lock(py, &self.state);
        let slots = slots_arg(slots, &set)?;
        let ids = ids_arg(tokens, &TOKENS)?;
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
    fn finding(&self, py: Python<'_>, slot: Int) -> PyResult<Option<PyTokenFinding>> {
        Ok(lock(py, &self.state).detector(slot_arg(&slot)?)?.finding().cloned().map(PyTokenFinding::from))
    }

    /// Units fed to the stream in `slot`.
    fn units_seen(&self, py: Python<'_>, slot: Int) -> PyResult<u64> {
        Ok(lock(py, &self.state).detector(slot_arg(&slot)?)?.units_seen())
    }
}
