//! What the detector reports.

use std::fmt;

/// Which rule found the repetition. The order is the rules' code order ([`Rule::code`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    /// A block of at most `max_period` units repeated back to back.
    PeriodicRun,
    /// A block longer than `max_period` units repeated back to back.
    LongBlock,
    /// The same non-empty line, many times in a row (blank lines between them allowed).
    IdenticalLines,
    /// Lines equal once their digit runs are masked, a number one up from each line to the next
    /// (`1. test.py`, `2. test.py`, ...; blank lines between them allowed).
    CounterLines,
}

impl Rule {
    /// Every rule, in code order: `Rule::ALL[rule.code()] == rule`.
    pub const ALL: [Rule; 4] = [Rule::PeriodicRun, Rule::LongBlock, Rule::IdenticalLines, Rule::CounterLines];

    /// The rule's number in columnar output (Arrow, Parquet): its place in [`Rule::ALL`].
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The rule's name, as Python and every output spell it.
    pub const fn name(self) -> &'static str {
        match self {
            Rule::PeriodicRun => "periodic_run",
            Rule::LongBlock => "long_block",
            Rule::IdenticalLines => "identical_lines",
            Rule::CounterLines => "counter_lines",
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// One degenerate region. Offsets count units from the start of the stream (a Python `str`
/// index for text). A streaming detector reports the region as it stood when its rule first
/// held (`end == detected_at`, `repeats` the copies seen by then); an offline scan of a whole
/// text reports the whole region (`end` where the repetition stops, `repeats` every copy).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Finding {
    pub rule: Rule,
    /// Units in one copy of the block. For `identical_lines`: the line's length without its
    /// newline and trailing whitespace; for `counter_lines`, the block's (the lines after it
    /// differ in their numbers, so in length where a number gains a digit).
    pub period: u64,
    /// One copy of the repeated block (for `identical_lines`, the line without newline and
    /// trailing whitespace; for `counter_lines`, the first line so, or for a cycle of lines its
    /// first cycle, the lines joined by newlines). A line longer than the detector's window is cut to its last
    /// `window` units.
    pub block: Vec<u32>,
    /// Where the first copy starts (for `identical_lines`, where the first line starts).
    pub start: u64,
    /// Full copies (or lines): seen when the rule first held (streaming), or in the whole
    /// region (offline scan).
    pub repeats: u64,
    /// Units seen when the rule first held: `text[start:detected_at]` is the evidence.
    pub detected_at: u64,
    /// Where the region ends: `detected_at` when streaming; offline, the end of the last unit
    /// that repeats (for lines: after the last repeated line's newline, or the text's end when
    /// the text ends inside a copy).
    pub end: u64,
}

impl Finding {
    /// The offset from which a later finding may start without overlapping this one's first
    /// copy: a loop that breaks for a unit and resumes is a new region.
    pub(crate) fn anchor(&self) -> u64 {
        match self.rule {
            Rule::IdenticalLines | Rule::CounterLines => self.start,
            Rule::PeriodicRun | Rule::LongBlock => self.start + self.period,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;

    #[test]
    fn codes_are_places_in_all() {
        for (code, rule) in Rule::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(rule.code()), code, "{rule}");
        }
        let names: Vec<&str> = Rule::ALL.iter().map(|rule| rule.name()).collect();
        assert_eq!(names, ["periodic_run", "long_block", "identical_lines", "counter_lines"]);
    }
}
