//! The table of thresholds: each threshold is defined once, here, and everything that lists
//! thresholds is made from the table.
//!
//! A row gives a threshold's name (the field of [`RuleValues`], the keyword of Python's
//! `Rules(...)`, the key of `to_dict()`), its type (`u32`: every threshold counts units, lines
//! or copies), its doc line, its own bounds (`least`, `most`, and `why` a value under `least`
//! cannot work when the message should say so) and its value in each preset (`default`:
//! [`crate::DEFAULT_RULES`], `conservative`: [`crate::CONSERVATIVE_RULES`], `tokens`:
//! [`crate::TOKEN_RULES`], `small`: [`crate::SMALL_RULES`]), with the measurement behind each
//! value as a comment beside it. Bounds that relate two thresholds (`max_long_period` at least
//! `max_period`) are checked after every row's own, in `RuleValues::check` (rules.rs).
//!
//! `with_thresholds!` hands the table to a macro that makes something of every row:
//! `rule_values!` below makes [`RuleValues`], the presets' values, the bounds and
//! [`RuleValues::named_values`]; the binding (`python/rules.rs`) makes the Python class's
//! constructor, with a keyword and a default per threshold, and its getters. The table is a
//! macro because the binding's `#[pyo3(signature = ...)]` is read by pyo3 before any constant
//! is evaluated: the names must be there as tokens. The rows are in the order of the fields,
//! which `to_dict()`, `repr()` and the constructor's keywords keep.

use crate::rules::{MAX_LONG_PERIOD_LIMIT, MAX_SPAN_LIMIT, SAMPLE_UNITS};

/// Hands every row of the table to `$make!`, after `($($extra)*)`: what the caller passes
/// besides the table (the binding's other methods).
macro_rules! with_thresholds {
    ($make:ident $($extra:tt)*) => {
        $make! {
            ($($extra)*)

            /// Blocks up to this length are reported as `periodic_run`, longer ones as `long_block`.
            max_period: u32 {
                least: 1,
                most: u32::MAX,
                default: 150,
                // The baseline rules' longest block (docs/tuning.md); only names the rule (short
                // blocks and long ones share one formula).
                conservative: 150,
                // Only names the rule: blocks up to 64 tokens (~220 code points of English) are
                // `periodic_run`, longer ones `long_block`.
                tokens: 64,
                small: 8,
            }

            /// The longest block the detector looks for. Memory per stream grows with it.
            max_long_period: u32 {
                // At least `max_period` (a relation, see `RuleValues::check`).
                least: 0,
                most: MAX_LONG_PERIOD_LIMIT,
                default: 3840,
                // A repeated 92-line code block (llama.cpp#26039) is ~3,500 units. The window holds
                // four copies of the longest block: 3,840 keeps a stream's state within 64 KiB even at
                // 32-bit storage (token ids from 65,536), where 4,096 needed 66 KiB.
                conservative: 3840,
                // A repeated 92-line code block (llama.cpp#26039, ~3,500 code points) is ~1,100
                // tokens; the window holds four copies of the longest block: 13 KiB per stream for
                // ids below 65,536.
                tokens: 1536,
                small: 40,
            }

            /// Repeats needed by a short block that reads as words (`loadTools.`, `the, `).
            min_repeats: u32 {
                // At least `long_min_repeats` (a relation).
                least: 0,
                most: MAX_SPAN_LIMIT,
                // `loadTools.` x20 = 200 units: the README's 255,388-unit loop is found within 250
                // units of it (tests/core/test_api.py).
                default: 20,
                // `loadTools.` x20 = 200 units, as in the defaults. Benign words reach at most 0.53 of
                // the text rule (three copies of a 75-unit line in the email tests).
                conservative: 20,
                // The floor's copies. Benign short blocks stop at 11 copies of 18 tokens
                // (test_codecs.py) and 26 of 4 (a 104-token run in test_email.py, which the
                // 240-token floor decides).
                tokens: 20,
                small: 6,
            }

            /// Span after which a block of words needs fewer than `min_repeats` repeats: a sentence
            /// repeated ten times is as degenerate as a word repeated twenty times.
            text_span: u32 {
                least: 0,
                most: MAX_SPAN_LIMIT,
                // Sentences loop with few repeats: every SmolLM2 loop (periods 4-137 units, some with
                // 13-16 repeats before the length limit) is found at 480.
                default: 480,
                // Sentences loop with few repeats: every SmolLM2 loop (periods 4-137 units, some with
                // 13-16 repeats before the length limit) is found at 480, the tightest a Chinese
                // sentence (16.1 copies of 31 units, 16 needed: docs/tuning.md). Benign text holds 13.6
                // copies of a 33-unit sentence (a mock response in litellm's main.py, 450 units: load
                // 0.91).
                conservative: 480,
                // A block of 17-64 tokens needs ceil(320 / p) copies: 15-16 of the 21-22-token
                // `#define` and "la la la" copies, 6 of a 54-token sitemap entry, each ~330 tokens of
                // loop, so that a loop that starts in a 400-token answer's first ~70 tokens is
                // stopped. The strongest hand-written block under 64 tokens is 10 copies of a
                // 31-token row of digits (test_peepholer.py, 310 tokens: load 0.91 against 11
                // copies, 341). A longer benign block is found: test_email.py's expected encoder
                // output (a program's output pasted into a test) holds 9.8 copies of an 87-token and
                // 6.7 of an 82-token cycle of encoded-word lines; not finding them takes 10 copies of
                // an 87-token block (870 tokens), which would leave every loop of 44-87 tokens
                // unstopped within a 400-token limit.
                tokens: 320,
                small: 40,
            }

            /// Repeats needed by a short block of code, digits or punctuation (`'\ufffe'`, `0, `).
            code_min_repeats: u32 {
                // At least `long_min_repeats` (a relation).
                least: 0,
                most: MAX_SPAN_LIMIT,
                // A block that is not words needs 1,024 units (`code_span`), and one shorter than 9
                // units 120 copies, at least 512 units (`-1`, `0, `): as in the conservative preset,
                // which finds nothing in a full install, so no preset finds a short block sooner.
                default: 120,
                // Benign code reaches 98 copies of a 10-unit block (`",0,0,0,"*` in a minified array of
                // ray's speedscope), and a real loop of SmolLM2 164 (` -1.000000` after a timestamp,
                // tests/data/smollm2_minus_one_loop.txt): 120 leaves 1.22x either way. Short code
                // blocks need this many; longer ones `code_span`.
                conservative: 120,
                // The same as the rules of words: ids do not tell code from words.
                tokens: 20,
                small: 8,
            }

            /// Span after which a block of code needs fewer than `code_min_repeats` repeats.
            code_span: u32 {
                least: 0,
                most: MAX_SPAN_LIMIT,
                // As `code_min_repeats`.
                default: 1024,
                // Longer benign code blocks reach 9.8 copies of 105 units (MIME headers in
                // test_email.py, 1,030 units: load 0.65 at 1,500, a 1.53x margin); a model that
                // repeats a 52-unit block (a language's name and an empty code fence) 32 times, 1,664
                // units, is found.
                conservative: 1500,
                // As `code_min_repeats`.
                tokens: 320,
                small: 60,
            }

            /// The fewest repeats any block needs, however long it is.
            long_min_repeats: u32 {
                least: 2,
                why: "one copy is not a repeat",
                // `long_min_repeats x max_long_period` at most `MAX_SPAN_LIMIT` (a relation).
                most: u32::MAX,
                default: 4,
                // Three copies of a 214-unit block occur in test_sys_settrace.py; a fourth never does.
                conservative: 4,
                // Three copies of a 119-token block occur in test_email's data; a fourth never does.
                tokens: 4,
                small: 3,
            }

            /// The smallest span (units) any periodic finding covers.
            min_span: u32 {
                least: 2 * SAMPLE_UNITS,
                most: MAX_SPAN_LIMIT,
                // `ny` x32 (gemini-cli#5813) is 64 units.
                default: 64,
                // `ny` x32 (gemini-cli#5813) is 64 units.
                conservative: 64,
                // The floor of a short block (under 7 tokens: 20 copies are fewer than 128): SmolLM2's
                // table-border loop (`|   `, 2 tokens a copy) and its 2-token `/net` loop in a Go
                // program (`d25-greedy` in tests/data/recorded_streams.jsonl) are stopped at token 129
                // and 172 of a 400-token answer (the former preset, 45 copies: 91 and 134); the
                // strongest benign short block is 26 copies of 4 tokens (104 tokens in test_email.py,
                // load 0.81). Longer blocks are decided by their copies (20 of 7 tokens: 140).
                tokens: 128,
                small: 32,
            }

            /// The smallest span of a block of code, digits or punctuation.
            code_min_span: u32 {
                least: 2 * SAMPLE_UNITS,
                most: MAX_SPAN_LIMIT,
                // As `code_min_repeats`.
                default: 512,
                // Data is full of short code blocks: 52 `, 0` in a JSON histogram, rows of `,0`
                // pixels.
                conservative: 512,
                // As `min_span`.
                tokens: 128,
                small: 32,
            }

            /// Span needed by a block whose only visible character is one char (`-`, `=`, `a`, `1`).
            single_char_min_span: u32 {
                least: 2 * SAMPLE_UNITS,
                most: MAX_SPAN_LIMIT,
                default: 1024,
                // A tokenizer's vocabulary holds a token of 1,024 `Ġ` (byte-level BPE's space), a
                // docstring of langgraph_sdk a 564-dash rule, tests 200-unit runs of one letter or
                // digit: 2,048 leaves 2x. The one loop of such a block among SmolLM2's outputs (the
                // border `|   ` of a markdown table, docs/tuning.md) spans 2,999 units.
                conservative: 2048,
                // One id repeated: a test holds 200 `0` tokens in a row (test_gettext.py): 240 leaves
                // 1.2x. The `it ` loop of vscode#301818 (one token) shows 300 copies in its excerpt.
                tokens: 240,
                small: 40,
            }

            /// Span needed by a block made only of whitespace.
            whitespace_min_span: u32 {
                least: 2 * SAMPLE_UNITS,
                most: MAX_SPAN_LIMIT,
                default: 1024,
                // Benign whitespace runs stop at 88 units (load 0.04); a whitespace loop is cheap to
                // wait for.
                conservative: 2048,
                // As `single_char_min_span`.
                tokens: 240,
                small: 48,
            }

            /// Span needed by a table row or indented data (see [`crate::BlockClass::Table`]), and
            /// after which it needs fewer than `code_min_repeats`.
            table_span: u32 {
                least: 0,
                most: MAX_SPAN_LIMIT,
                default: 1024,
                // Generated data holds table rows and one short item per indented line for long:
                // idna's uts46data.py repeats `,\n    None` 151 times (1,516 units) and its lists of
                // the alphabet 13 times over (p=234, 3,049 units); a minified array repeats a 44-unit
                // row 49 times (2,199 units). At 4,096 each stays under 0.75; no loop of the
                // development set is a table.
                conservative: 4096,
                // Tables are told by their whitespace and few distinct units, which ids do not have
                // as code points do: the span of other blocks.
                tokens: 320,
                small: 64,
            }

            /// Consecutive identical lines needed when the line reads as words.
            min_lines: u32 {
                least: 2,
                most: u32::MAX,
                // The baseline rules ask 25 identical lines; a line of words needs fewer (clean model
                // output repeats a line up to ~7 times, prose ~5).
                default: 14,
                // Benign lines of words (not statements nor table rows, see `ClassCounts::line_class`)
                // repeat at most 6 times in a row (an `#include` in torch's generated headers); clean
                // model output up to ~7, prose ~5. 14 leaves 2.33x and finds a model that repeats a
                // line 14 times and stops by itself; the development set's line loops repeat 15 to
                // 212 times.
                conservative: 14,
                // The line rule splits at id 10, which is no newline in most vocabularies (a special
                // token in SmolLM2's); a streak of identical "lines" counts like the same number of
                // copies.
                tokens: 20,
                small: 3,
            }

            /// Consecutive identical lines needed when the line is code, digits or punctuation.
            code_min_lines: u32 {
                least: 2,
                most: u32::MAX,
                default: 25,
                // Benign data repeats short code lines a lot: 32 `'\ufffe'` lines in
                // encodings/iso8859_8.py, 26 indented `text/plain` lines in test_email.py, 52 `0,`
                // lines in an indented JSON histogram; shorter lines need more (see
                // `required_lines`): 151 `    None,` lines in idna's uts46data.py need 200 (load
                // 0.76).
                conservative: 100,
                // As `min_lines`.
                tokens: 20,
                small: 4,
            }

            /// Consecutive counter lines (equal once digit runs are masked, every number unchanged or
            /// one up from the line before, at least one up; or a cycle of two or three such lines,
            /// see the counters module) needed by a template of words.
            counter_min_lines: u32 {
                least: 2,
                most: MAX_SPAN_LIMIT,
                // A template of words counting on: 16 lines whatever its length (real outputs write
                // 10-70 such lines before a token limit: `N. Check the server's response ...` 38 to
                // the limit). Benign text counts on for at most 10 lines of a template of words
                // (`Classifier: Programming Language :: Python :: 3.N` in package metadata; mdoc's
                // `.ds doc-operating-system-OpenBSD-N.0` table): load 0.63. See docs/tuning.md.
                default: 16,
                // Templates of words need 16 lines or 640 units of lines (25 of `N. A first-date
                // activity:`).
                conservative: 16,
                // Off in effect (a streak of 2^24 lines): ids 48-57 stand for whatever the vocabulary
                // puts there, not for digits, and id 10 is no newline in most vocabularies.
                tokens: MAX_SPAN_LIMIT,
                small: 3,
            }

            /// Units (template length plus newline, times lines) after which a counter streak of words
            /// needs no more than `counter_min_lines`: with a span, a short template needs more lines
            /// (see [`crate::Rules::required_counter_lines`]); 0, none.
            counter_span: u32 {
                least: 0,
                most: MAX_SPAN_LIMIT,
                // With `counter_min_lines`, in every preset (see there).
                default: 0,
                conservative: 640,
                tokens: 0,
                small: 20,
            }

            /// Consecutive counter lines needed by a template of code or markup.
            code_counter_min_lines: u32 {
                least: 2,
                most: MAX_SPAN_LIMIT,
                // Code and markup: 25 lines, as many as the baseline rules' identical lines, whatever
                // the length.
                default: 25,
                // Counter templates of code and markup (`counter_lines`): a SmolLM2 output
                // (`- N. Cleaning:`, docs/tuning.md) counts on for 156 lines of a 14-unit template (107
                // needed, 1.46x). Benign text counts on for at most 54 lines of a 22-unit template
                // (`insert ( 2400 1255 0 'I/O' )` in postgres.bki, 70 needed: load 0.77), 61 of a
                // 16-unit one (torch's vec512_int.h, 95 needed: 0.64); clean numbered lists stop at ~20
                // items, and 40 lines leave 2x over them.
                conservative: 40,
                // Off in effect, as `counter_min_lines`.
                tokens: MAX_SPAN_LIMIT,
                small: 4,
            }

            /// Units of lines after which a counter streak of code or markup needs no more than
            /// `code_counter_min_lines` (0: none).
            code_counter_span: u32 {
                least: 0,
                most: MAX_SPAN_LIMIT,
                // With `code_counter_min_lines`, in every preset (see there).
                default: 0,
                conservative: 1600,
                tokens: 0,
                small: 30,
            }

            /// Span needed by a run inside a packed payload (a block of base64 chars, `,` or `;` after
            /// [`crate::PACKED_CONTEXT`] of them: a data URI, a source map's mappings). A payload
            /// raises the threshold, it never removes it: a model that degenerates while writing an
            /// image is found.
            payload_span: u32 {
                least: 2 * SAMPLE_UNITS,
                most: MAX_SPAN_LIMIT,
                default: 4096,
                // A PNG inside one of Adwaita's SVGs holds 3,823 `A`s after its base64 prefix.
                conservative: 4096,
                // Ids 43-122 are no base64 chars: a "payload" of ids is any block, and needs its
                // floor.
                tokens: 128,
                small: 96,
            }

            /// Consecutive counter lines needed by a template of data: no letter (`(N)`, bare
            /// numbers, `$N.5`), a table row of cells, or a counter of four digits or more (a year,
            /// an id).
            data_counter_min_lines: u32 {
                least: 2,
                most: MAX_SPAN_LIMIT,
                // Data (numbers alone, table cells, years and ids) counts on longest in benign text
                // (18 lines of `1: 1,` in a jsonschema test; year lists of 35): 64 lines.
                default: 64,
                // What bare numbers needed before the data class: perl's unicore tables count on
                // for 150 lines of one number (machine-generated).
                conservative: 320,
                // Off in effect, as `counter_min_lines`.
                tokens: MAX_SPAN_LIMIT,
                small: 5,
            }

            /// Lines a streak of template lines needs: numbered prose lines that each share the
            /// template (numbers masked) of one of the 16 lines before, in or out of order.
            template_min_lines: u32 {
                least: 2,
                most: MAX_SPAN_LIMIT,
                // 8 lines: no hand-written file of the wide corpus and no clean answer holds such a
                // streak, and the development sets' near-loops that no other rule finds hold it by
                // unit 2,440 (benches/template_lines_candidate.py; docs/tuning.md).
                default: 8,
                // Off in effect: machine-generated tables (a locale's collation table, Perl's
                // Unicode name list) are lines of a few templates with numbers changing.
                conservative: MAX_SPAN_LIMIT,
                // Off in effect, as `counter_min_lines`: ids 48-57 are no digits.
                tokens: MAX_SPAN_LIMIT,
                small: 4,
            }
        }
    };
}
// The binding reads the table by this path.
#[cfg(feature = "python")]
pub(crate) use with_thresholds;

/// One threshold's own bounds, from its row.
pub(crate) struct Bounds {
    pub name: &'static str,
    pub least: u32,
    /// What the message for a value under `least` adds: why it cannot work (` (...)`), or nothing.
    pub why: &'static str,
    pub most: u32,
}

/// Makes, from the rows of the table: [`RuleValues`] (a field per row, with its doc line), the
/// preset values, every row's [`Bounds`] and [`RuleValues::named_values`].
macro_rules! rule_values {
    (
        ()
        $(
            $(#[doc = $doc:literal])*
            $name:ident: u32 {
                least: $least:expr,
                $(why: $why:literal,)?
                most: $most:expr,
                default: $default:expr,
                conservative: $conservative:expr,
                tokens: $tokens:expr,
                small: $small:expr,
            }
        )*
    ) => {
        /// Rule values as given, not yet checked: [`Rules::new`](crate::Rules::new) checks that
        /// they work together and makes the [`Rules`](crate::Rules) a detector takes. Lengths
        /// are in units (code points or token ids). One field per row of the table of thresholds
        /// (rust/thresholds.rs), in its order.
        #[derive(Clone, Copy, Debug, PartialEq, Eq)]
        pub struct RuleValues {
            $(
                $(#[doc = $doc])*
                pub $name: u32,
            )*
        }

        /// How many thresholds there are.
        const COUNT: usize = [$(stringify!($name)),*].len();

        /// Every threshold's own bounds, in the order of the fields.
        pub(crate) const BOUNDS: [Bounds; COUNT] = [$(
            Bounds { name: stringify!($name), least: $least, why: concat!($(" (", $why, ")")?), most: $most },
        )*];

        pub(crate) const DEFAULT_VALUES: RuleValues = RuleValues { $($name: $default,)* };
        pub(crate) const CONSERVATIVE_VALUES: RuleValues = RuleValues { $($name: $conservative,)* };
        pub(crate) const TOKEN_VALUES: RuleValues = RuleValues { $($name: $tokens,)* };
        pub(crate) const SMALL_VALUES: RuleValues = RuleValues { $($name: $small,)* };

        impl RuleValues {
            /// Every value with its field's name, in the order the fields are declared.
            pub fn named_values(&self) -> [(&'static str, u32); COUNT] {
                [$((stringify!($name), self.$name),)*]
            }

            /// The values `value(name)` gives, asked for in the order of the fields.
            pub fn from_fn(mut value: impl FnMut(&'static str) -> u32) -> RuleValues {
                RuleValues { $($name: value(stringify!($name)),)* }
            }
        }
    };
}

with_thresholds!(rule_values);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Rules;

    #[test]
    fn every_preset_is_valid() {
        for values in [DEFAULT_VALUES, CONSERVATIVE_VALUES, TOKEN_VALUES, SMALL_VALUES] {
            assert!(Rules::new(values).is_ok(), "{values:?}");
        }
    }

    #[test]
    fn the_bounds_and_named_values_follow_the_fields() {
        let names = DEFAULT_VALUES.named_values().map(|(name, _)| name);
        assert_eq!(BOUNDS.map(|bounds| bounds.name), names);
        let mut asked = Vec::new();
        let values = RuleValues::from_fn(|name| {
            asked.push(name);
            asked.len() as u32
        });
        assert_eq!(asked, names);
        assert_eq!(values.named_values().map(|(_, value)| value), std::array::from_fn(|i| i as u32 + 1));
        assert_eq!(values.named_values().len(), COUNT);
    }
}
