//! The Python binding (`loopbreak._core`): the only code that uses pyo3, one file per concern.
//!
//! Text crosses as code points, so every offset is a Python `str` index. A `str` holding lone
//! surrogates (which UTF-8 cannot encode) is read through `surrogatepass`: each surrogate is one
//! unit like any other code point, and comes back unchanged in blocks and trimmed text.
//!
//! - `input`: text and token ids from Python, code points back, the lock of streaming objects;
//! - `rules`: `Rules`; `rule_info`: `RuleInfo` and `RULE_INFO`, every rule's metadata;
//! - `findings`: `Finding` and `TokenFinding`;
//! - `detectors`: `Detector`, `TokenDetector`, `TokenStreams`;
//! - `batch`: `scan`, `scan_many`, `scan_utf8_texts`, `scan_utf8_columns`; `trim`: `trim`, `Trimmed`, `Removal`;
//! - `json_lines`: `JsonLinesScan`, the JSON-lines reader of `loopbreak scan`.

mod batch;
mod detectors;
mod findings;
mod input;
mod json_lines;
mod rule_info;
mod rules;
mod trim;

/// The module runs without the GIL on a free-threaded Python (`gil_used = false`), because
/// nothing it exposes relies on the GIL for safety:
/// - every class is `frozen`: Python can never take a mutable borrow of one;
/// - `Rules`, `RuleInfo`, `Finding`, `TokenFinding`, `Removal` and `Trimmed` never change once built;
/// - `Detector`, `TokenDetector` and `TokenStreams` keep their state in a `Mutex`, taken for
///   the whole of each method (`input::lock`), so two threads feeding one detector are
///   serialised as they are under the GIL; the lock is waited for with the GIL released, so a
///   holder working detached can always finish;
/// - functions borrow `str` data, which is immutable, and copy token ids and buffers before
///   working on them;
/// - what the core shares between threads is built for it: the default rules' sampling plan and
///   the line-hash key (each a `OnceLock`), and `scan_many`'s thread pools (behind a `Mutex`);
/// - `JsonLinesScan` takes its chunks from its threads through a `Mutex`.
#[pyo3::pymodule(gil_used = false)]
mod _core {
    use pyo3::prelude::*;
    use pyo3::types::PyTuple;

    #[pymodule_export]
    use super::batch::{scan, scan_many, scan_utf8_columns, scan_utf8_texts};
    #[pymodule_export]
    use super::detectors::{PyDetector, PyTokenDetector, PyTokenStreams};
    #[pymodule_export]
    use super::findings::{PyFinding, PyTokenFinding};
    #[pymodule_export]
    use super::json_lines::{PyJsonLines, PyJsonLinesScan};
    #[pymodule_export]
    use super::rule_info::PyRuleInfo;
    #[pymodule_export]
    use super::rules::PyRules;
    #[pymodule_export]
    use super::trim::{trim, PyRemoval, PyTrimmed};

    #[pymodule_init]
    fn init(m: &Bound<'_, PyModule>) -> PyResult<()> {
        m.add("DEFAULT_KEEP", crate::DEFAULT_KEEP)?;
        // The rules' names in code order: `RULE_NAMES[code]` names the rule in columnar output.
        m.add("RULE_NAMES", PyTuple::new(m.py(), crate::Rule::ALL.map(crate::Rule::name))?)?;
        m.add("RULE_INFO", super::rule_info::rule_info(m.py())?)?;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
