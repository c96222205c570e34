//! What the detector reports.

use std::fmt;

/// Which rule found the repetition. The order is the rules' code order ([`Rule::code`]); what
/// each rule finds, and the rest of its metadata, is in [`Rule::info`].
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Rule {
    PeriodicRun,
    LongBlock,
    IdenticalLines,
    CounterLines,
    TemplateLines,
    CounterRun,
}

/// What one copy of a rule's repeated block is, and so what `repeats` counts (in a
/// [`Finding`] and a [`crate::Removal`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CopyUnit {
    /// The block, its copies back to back: `repeats` counts copies.
    Block,
    /// A line, or a cycle of lines, blank lines between copies allowed: `repeats` counts lines.
    Line,
}

impl CopyUnit {
    /// The copy unit's name, as Python spells it (`RuleInfo.copy`).
    pub const fn name(self) -> &'static str {
        match self {
            CopyUnit::Block => "block",
            CopyUnit::Line => "line",
        }
    }
}

/// A rule's metadata: everything outside its detection code needs to know of it (Python reads
/// it as `loopbreak.RULE_INFO`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleInfo {
    /// The rule's name, as Python and every output spell it.
    pub name: &'static str,
    /// What one copy is.
    pub copy: CopyUnit,
    /// What [`Finding::period`] counts.
    pub period: &'static str,
    /// The thresholds the rule reads (names of the table of `rust/thresholds.rs`, in its order).
    pub thresholds: &'static [&'static str],
    /// What the rule finds, in one line.
    pub description: &'static str,
}

/// The thresholds that decide whether a block repeated back to back is degenerate (see
/// [`crate::Rules::required_span`]), in the table's order.
macro_rules! block_thresholds {
    ($($first:literal),*) => {
        &[
            $($first,)*
            "min_repeats",
            "text_span",
            "code_min_repeats",
            "code_span",
            "long_min_repeats",
            "min_span",
            "code_min_span",
            "single_char_min_span",
            "whitespace_min_span",
            "table_span",
            "payload_span",
        ]
    };
}

impl Rule {
    /// Every rule, in code order: `Rule::ALL[rule.code()] == rule`.
    pub const ALL: [Rule; 6] = [
        Rule::PeriodicRun,
        Rule::LongBlock,
        Rule::IdenticalLines,
        Rule::CounterLines,
        Rule::TemplateLines,
        Rule::CounterRun,
    ];

    /// The rule's number in columnar output (Arrow, Parquet): its place in [`Rule::ALL`].
    pub const fn code(self) -> u8 {
        self as u8
    }

    /// The rule's metadata: the one place that states, per rule, its name, what a copy is, what
    /// its `period` counts, the thresholds it reads and what it finds.
    pub const fn info(self) -> &'static RuleInfo {
        match self {
            Rule::PeriodicRun => &RuleInfo {
                name: "periodic_run",
                copy: CopyUnit::Block,
                period: "units in the block",
                thresholds: block_thresholds!("max_period"),
                description: "A block of at most max_period units repeated back to back.",
            },
            Rule::LongBlock => &RuleInfo {
                name: "long_block",
                copy: CopyUnit::Block,
                period: "units in the block",
                thresholds: block_thresholds!("max_period", "max_long_period"),
                description: "A block longer than max_period units (up to max_long_period) repeated back to back.",
            },
            Rule::IdenticalLines => &RuleInfo {
                name: "identical_lines",
                copy: CopyUnit::Line,
                period: "units in the line, without its newline and trailing whitespace",
                thresholds: &["code_span", "table_span", "min_lines", "code_min_lines"],
                description: "The same non-empty line many times in a row (blank lines between them allowed).",
            },
            Rule::CounterLines => &RuleInfo {
                name: "counter_lines",
                copy: CopyUnit::Line,
                period: "units in the first line without its newline and trailing whitespace, or in \
                         the first cycle of lines joined by newlines",
                thresholds: &[
                    "max_long_period",
                    "counter_min_lines",
                    "counter_span",
                    "code_counter_min_lines",
                    "code_counter_span",
                    "data_counter_min_lines",
                ],
                description: "Lines equal once their digit runs are masked, a number one up from each line (or \
                              cycle of two or three lines) to the next: `1. test.py`, `2. test.py`, ... \
                              (blank lines between them allowed).",
            },
            Rule::TemplateLines => &RuleInfo {
                name: "template_lines",
                copy: CopyUnit::Line,
                period: "units in the streak's first line without its newline and trailing whitespace",
                thresholds: &["max_long_period", "code_counter_min_lines", "template_min_lines"],
                description: "Prose lines with numbers drawn from a few templates (numbers masked), each \
                              recurring among the 16 lines before it, in or out of order, or reworded \
                              from nothing the text before it lacks: numbered items cycling, a dated line \
                              echoed again and again, a prompt echoed in new wordings; and counted lists \
                              whose items come back as they were, save their count (`N. China`, `N. India`, \
                              `N. China` again).",
            },
            Rule::CounterRun => &RuleInfo {
                name: "counter_run",
                copy: CopyUnit::Block,
                period: "units in the count's first number and its separator",
                thresholds: &["max_long_period", "data_counter_min_lines"],
                description: "Numbers counting by one inside a line, the same separator of at most 16 units \
                              between each pair: `54.55.56.57.`, `1, 2, 3, 4`.",
            },
        }
    }

    /// The rule's name, as Python and every output spell it.
    pub const fn name(self) -> &'static str {
        self.info().name
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
    /// newline and trailing whitespace; for `counter_lines` and `template_lines`, the block's
    /// (the lines after it differ in their numbers, so in length where a number gains a digit);
    /// for `counter_run`, the count's first number and its separator.
    pub period: u64,
    /// One copy of the repeated block (for `identical_lines`, the line without newline and
    /// trailing whitespace; for `counter_lines`, the first line so, or for a cycle of lines its
    /// first cycle, the lines joined by newlines; for `template_lines`, the streak's first line
    /// so; for `counter_run`, the count's first number and the separator after it). A line longer
    /// than the detector's window is cut to its last `window` units.
    pub block: Vec<u32>,
    /// Where the first copy starts (for the line rules, where the first line starts; for
    /// `counter_run`, the count's first number).
    pub start: u64,
    /// Full copies (or lines; for `counter_run`, numbers counted): seen when the rule first held
    /// (streaming), or in the whole region (offline scan).
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
            Rule::IdenticalLines | Rule::CounterLines | Rule::TemplateLines | Rule::CounterRun => self.start,
            Rule::PeriodicRun | Rule::LongBlock => self.start + self.period,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Rule;
    use crate::DEFAULT_RULES;

    #[test]
    fn codes_are_places_in_all() {
        for (code, rule) in Rule::ALL.into_iter().enumerate() {
            assert_eq!(usize::from(rule.code()), code, "{rule}");
        }
        let names: Vec<&str> = Rule::ALL.iter().map(|rule| rule.name()).collect();
        assert_eq!(
            names,
            ["periodic_run", "long_block", "identical_lines", "counter_lines", "template_lines", "counter_run"]
        );
    }

    /// Each rule names thresholds of the table, in its order, and every threshold is read by a
    /// rule.
    #[test]
    fn rules_read_the_thresholds_of_the_table() {
        let table: Vec<&str> = DEFAULT_RULES.named_values().iter().map(|(name, _)| *name).collect();
        let place = |name: &str| table.iter().position(|&t| t == name);
        for rule in Rule::ALL {
            let places: Vec<Option<usize>> = rule.info().thresholds.iter().map(|&name| place(name)).collect();
            assert!(places.iter().all(Option::is_some), "{rule}: {:?}", rule.info().thresholds);
            assert!(places.is_sorted(), "{rule}: {:?}", rule.info().thresholds);
        }
        for name in table {
            assert!(Rule::ALL.iter().any(|rule| rule.info().thresholds.contains(&name)), "no rule reads {name}");
        }
    }
}
