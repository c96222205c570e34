//! What crosses from Python: text as CPython stores it, token ids from lists and buffers, and
//! code points back to `str`; and the lock every streaming object takes.

use std::fmt;
use std::sync::{Mutex, MutexGuard};

use pyo3::buffer::{Element, PyUntypedBuffer};
use pyo3::exceptions::{PyOverflowError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::sync::MutexExt;
use pyo3::types::{PyByteArray, PyBytes, PyList, PyString, PyTuple};

use crate::detector::scan_stored;
use crate::lanes::Unit;
use crate::{Detector, Finding, Rules};

/// Inputs above this many bytes are worked on with the GIL released.
pub const DETACH_ABOVE_BYTES: usize = 64 * 1024;

/// Units from Python. A `str` is borrowed as CPython stores it, one, two or four bytes per code
/// point (lone surrogates included), so it is neither encoded nor decoded on the way in (where
/// that is sound, see `str_units`); token ids are copied from their list or buffer.
#[cfg_attr(not(all(target_arch = "x86_64", not(any(Py_LIMITED_API, PyPy, GraalPy)))), allow(dead_code))]
pub enum Text<'a> {
    Bytes(&'a [u8]),
    Narrow(&'a [u16]),
    Wide(&'a [u32]),
    /// Units copied out: token ids, or code points where a `str` is not borrowed.
    Owned(Vec<u32>),
}

impl Text<'_> {
    pub fn len_bytes(&self) -> usize {
        match self {
            Text::Bytes(units) => size_of_val(*units),
            Text::Narrow(units) => size_of_val(*units),
            Text::Wide(units) => size_of_val(*units),
            Text::Owned(units) => size_of_val(units.as_slice()),
        }
    }

    pub fn to_units(&self) -> Vec<u32> {
        match self {
            Text::Bytes(units) => widened(units),
            Text::Narrow(units) => widened(units),
            Text::Wide(units) => units.to_vec(),
            Text::Owned(units) => units.clone(),
        }
    }

    /// Every finding in the units, as a new detector fed them would report.
    pub fn scan(&self, rules: &Rules) -> Vec<Finding> {
        match self {
            Text::Bytes(units) => scan_stored(units, rules),
            Text::Narrow(units) => scan_stored(units, rules),
            Text::Wide(units) => scan_stored(units, rules),
            Text::Owned(units) => scan_stored(units, rules),
        }
    }

    /// Feeds the units to `detector`, with the GIL released when there are many.
    pub fn feed(&self, py: Python<'_>, detector: &mut Detector) -> Vec<Finding> {
        let mut found = Vec::new();
        let mut run = || match self {
            Text::Bytes(units) => detector.feed_stored(units, &mut found),
            Text::Narrow(units) => detector.feed_stored(units, &mut found),
            Text::Wide(units) => detector.feed_stored(units, &mut found),
            Text::Owned(units) => detector.feed_stored(units, &mut found),
        };
        if self.len_bytes() > DETACH_ABOVE_BYTES {
            py.detach(run);
        } else {
            run();
        }
        found
    }
}

fn widened<S: Unit>(units: &[S]) -> Vec<u32> {
    units.iter().map(|&unit| unit.into()).collect()
}

/// `obj` as text; `what` names the argument in the `TypeError`.
pub fn text_arg<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Text<'a>> {
    let Ok(s) = obj.cast::<PyString>() else {
        return Err(PyTypeError::new_err(format!("{what} must be str, not {}", obj.get_type().name()?)));
    };
    str_units(s)
}

/// A `str` borrowed as CPython stores it, on x86-64 CPython with its full API only: PyO3 reads
/// the storage kind from a C bitfield whose layout it tests there (and where this package is
/// built and tested), and the storage does not exist on PyPy, GraalPy or the limited API.
/// Everywhere else, the portable `str_units` below copies the code points out instead, so the
/// package still builds and behaves the same, only slower.
#[cfg(all(target_arch = "x86_64", not(any(Py_LIMITED_API, PyPy, GraalPy))))]
fn str_units<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Text<'a>> {
    use pyo3::types::string::PyStringData;
    // SAFETY: the storage kind is read as laid out on x86-64 (above). The data stays valid
    // while `s` is borrowed: a str is immutable.
    Ok(match unsafe { s.data() }? {
        PyStringData::Ucs1(units) => Text::Bytes(units),
        PyStringData::Ucs2(units) => Text::Narrow(units),
        PyStringData::Ucs4(units) => Text::Wide(units),
    })
}

/// The code points of a `str`, copied out through UTF-8 (the portable path, see above). Lone
/// surrogates, which UTF-8 cannot hold, come through `surrogatepass` as on the way back.
#[cfg(not(all(target_arch = "x86_64", not(any(Py_LIMITED_API, PyPy, GraalPy)))))]
fn str_units<'a>(s: &'a Bound<'_, PyString>) -> PyResult<Text<'a>> {
    if let Ok(text) = s.to_cow() {
        return Ok(Text::Owned(text.chars().map(u32::from).collect()));
    }
    let encoded = s.call_method1("encode", ("utf-8", "surrogatepass"))?.cast_into::<PyBytes>()?;
    Ok(Text::Owned(code_points(encoded.as_bytes())))
}

/// The code points of UTF-8 as `surrogatepass` writes it (surrogates as three-byte sequences).
#[cfg(not(all(target_arch = "x86_64", not(any(Py_LIMITED_API, PyPy, GraalPy)))))]
fn code_points(bytes: &[u8]) -> Vec<u32> {
    let mut units = Vec::with_capacity(bytes.len());
    let mut at = 0;
    while at < bytes.len() {
        let lead = bytes[at];
        let (len, bits) = match lead {
            0x00..=0x7F => (1, u32::from(lead)),
            0xC0..=0xDF => (2, u32::from(lead & 0x1F)),
            0xE0..=0xEF => (3, u32::from(lead & 0x0F)),
            _ => (4, u32::from(lead & 0x07)),
        };
        units.push(bytes[at + 1..at + len].iter().fold(bits, |unit, &byte| unit << 6 | u32::from(byte & 0x3F)));
        at += len;
    }
    units
}

/// Code points back to a Python `str`, surrogates included.
pub fn units_to_str<'py>(py: Python<'py>, units: &[u32]) -> PyResult<Bound<'py, PyString>> {
    let chars: Option<String> = units.iter().map(|&u| char::from_u32(u)).collect();
    if let Some(s) = chars {
        return Ok(PyString::new(py, &s));
    }
    let mut bytes = Vec::with_capacity(units.len() * 3);
    for &u in units {
        match char::from_u32(u) {
            Some(ch) => bytes.extend_from_slice(ch.encode_utf8(&mut [0; 4]).as_bytes()),
            None => bytes.extend_from_slice(&[
                0xE0 | (u >> 12) as u8,
                0x80 | ((u >> 6) & 0x3F) as u8,
                0x80 | (u & 0x3F) as u8,
            ]),
        }
    }
    let decoded = PyBytes::new(py, &bytes).call_method1("decode", ("utf-8", "surrogatepass"))?;
    Ok(decoded.cast_into::<PyString>()?)
}

/// An int argument of any size (or an object with `__index__`, as numpy's ints), whose range
/// the function checks: a value out of range, however large, is then a `ValueError` that names
/// the argument, never an `OverflowError`. Anything else is a `TypeError`.
#[derive(Clone, Debug)]
pub enum Int {
    /// The value, when it fits in 128 bits (every range checked is far inside).
    Small(i128),
    /// A value beyond 128 bits, as Python prints it: out of every range.
    Huge(String),
}

impl Int {
    /// The value as a `T`, if it is one and at least `least`.
    pub fn get<T: TryFrom<i128> + PartialOrd>(&self, least: T) -> Option<T> {
        match self {
            Int::Small(value) => T::try_from(*value).ok().filter(|value| *value >= least),
            Int::Huge(_) => None,
        }
    }
}

impl From<u32> for Int {
    fn from(value: u32) -> Int {
        Int::Small(i128::from(value))
    }
}

impl From<u64> for Int {
    fn from(value: u64) -> Int {
        Int::Small(i128::from(value))
    }
}

impl fmt::Display for Int {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Int::Small(value) => write!(f, "{value}"),
            Int::Huge(shown) => f.write_str(shown),
        }
    }
}

impl<'py> FromPyObject<'_, 'py> for Int {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Int> {
        match obj.extract::<i128>() {
            Ok(value) => Ok(Int::Small(value)),
            Err(error) if error.is_instance_of::<PyOverflowError>(obj.py()) => {
                // Python refuses to print ints of more than 4,300 digits by default.
                let shown = obj.str().map_or_else(|_| "an int of thousands of digits".into(), |s| s.to_string());
                Ok(Int::Huge(shown))
            }
            Err(error) => Err(error),
        }
    }
}

/// How errors name a list of ids: the argument, and one of its items.
pub struct Ids {
    pub name: &'static str,
    pub item: &'static str,
}

pub const TOKENS: Ids = Ids { name: "tokens", item: "token ids" };

/// Ids (token ids, slots, offsets) from a list of ints or a 1-D buffer (numpy array,
/// `array.array`) of unsigned or signed integers; each must fit in 32 bits unsigned.
pub fn ids_arg(obj: &Bound<'_, PyAny>, ids: &Ids) -> PyResult<Vec<u32>> {
    let Ids { name, item } = ids;
    let out_of_range =
        |value: &dyn fmt::Display| PyValueError::new_err(format!("{item} must be in 0..2**32, got {value}"));
    let id = |obj: Bound<'_, PyAny>| {
        let value: Int = obj.extract()?;
        value.get(0u32).ok_or_else(|| out_of_range(&value))
    };
    if let Ok(list) = obj.cast::<PyList>() {
        return list.iter().map(id).collect();
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple.iter().map(id).collect();
    }
    if obj.is_instance_of::<PyBytes>() || obj.is_instance_of::<PyByteArray>() {
        return Err(PyTypeError::new_err(format!("{name} must be ids (a list of int or an integer array), not bytes")));
    }
    let Ok(buffer) = PyUntypedBuffer::get(obj) else {
        return Err(PyTypeError::new_err(format!(
            "{name} must be a list of int or a 1-D integer array, not {}",
            obj.get_type().name()?
        )));
    };
    if buffer.dimensions() != 1 {
        return Err(PyValueError::new_err(format!("{name} must be 1-D, got {} dimensions", buffer.dimensions())));
    }
    let py = obj.py();
    let from_buffer = buffer_values::<u32>(py, &buffer)
        .or_else(|| buffer_values::<i64>(py, &buffer))
        .or_else(|| buffer_values::<i32>(py, &buffer))
        .or_else(|| buffer_values::<u64>(py, &buffer))
        .or_else(|| buffer_values::<u16>(py, &buffer))
        .or_else(|| buffer_values::<i16>(py, &buffer))
        .or_else(|| buffer_values::<u8>(py, &buffer))
        .or_else(|| buffer_values::<i8>(py, &buffer));
    match from_buffer {
        Some(values) => values?.into_iter().map(|v| u32::try_from(v).map_err(|_| out_of_range(&v))).collect(),
        None => Err(PyTypeError::new_err(format!(
            "{name} must hold integers (e.g. uint32 or int64), got buffer format '{}'",
            buffer.format().to_string_lossy()
        ))),
    }
}

/// The values of a buffer of `E`s, widened to `i128`, or `None` if it does not hold `E`s.
fn buffer_values<E: Element + Into<i128>>(py: Python<'_>, buffer: &PyUntypedBuffer) -> Option<PyResult<Vec<i128>>> {
    let typed = buffer.as_typed::<E>().ok()?;
    Some(typed.to_vec(py).map(|values| values.into_iter().map(Into::into).collect()))
}

/// Locks a streaming object's state. Waiting happens with the GIL released: a thread that holds
/// the lock may be working detached and needs the GIL back to finish. A poisoned lock (a panic,
/// not expected) is recovered rather than failing every later call.
pub fn lock<'a, T>(py: Python<'_>, mutex: &'a Mutex<T>) -> MutexGuard<'a, T> {
    mutex.lock_py_attached(py).unwrap_or_else(|poisoned| poisoned.into_inner())
}
