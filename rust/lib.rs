//! loopbreak: finds degenerate repetition (loops) in streamed language-model output.
//!
//! The core is pure Rust: [`Detector`] is fed text or token ids as they stream and reports a
//! [`Finding`] at the unit where a rule first holds; [`scan_str`] lists every degenerate region of
//! a whole text; [`trim_units`] shortens them before the text is saved. All thresholds live in
//! [`Rules`]. [`json_lines`] is the reader `loopbreak scan` reads JSON-lines files with. The Python binding (`--features python`) is the folder `python/`, the only
//! code that uses pyo3.

mod batch;
mod classes;
mod counter_run;
mod counters;
mod detector;
mod extent;
mod finding;
mod identical;
pub mod json_lines;
mod lanes;
mod lines;
mod plan;
mod rules;
mod state;
mod streams;
mod template_lines;
mod thresholds;
mod trim;
mod window;

#[cfg(feature = "python")]
mod python;

pub use batch::{map_parallel, scan_many};
pub use classes::{BlockClass, PACKED_CONTEXT};
pub use counters::TemplateClass;
pub use detector::{scan_str, scan_units, Detector};
pub use finding::{CopyUnit, Finding, Rule, RuleInfo};
pub use rules::{RuleValues, Rules, RulesError, CONSERVATIVE_RULES, DEFAULT_RULES, TOKEN_RULES};
pub use streams::{NoSuchStream, StreamSet};
pub use trim::{marker, trim_units, Removal, Trimmed, DEFAULT_KEEP};

#[cfg(any(test, feature = "oracle"))]
#[doc(hidden)]
pub mod oracle;
#[doc(hidden)]
pub use rules::SMALL_RULES;
#[cfg(test)]
mod tests;
