//! What a block or a line is made of: the content classes that decide its threshold.
//!
//! The model, in a paragraph: a unit is whitespace, a letter or other. A block is words when
//! three of four visible units are letters that read as words (not hex digits, not an
//! identifier's or base64's mix of case and digits) with little whitespace; it is one char when
//! one visible unit repeats, whitespace when none does; a table row when whitespace outweighs
//! what is visible, when it is drawn from a handful of distinct units, or when it is several
//! lines of code with no words; code otherwise (digits, punctuation, markup). Where a run sits
//! can change its class: after `[` or `(` words are a list of items (code), and after 64 base64
//! chars a run of them is a payload. Each class has its threshold in [`crate::Rules`], and none
//! is exempt: every class is bounded by 4,096 units (see `Rules::required_span`).

use crate::lanes::Unit;

/// Whether `unit` is an ASCII digit (what the counter, template and counter-run rules read as
/// a number's digit).
#[inline(always)]
pub fn is_ascii_digit(unit: u32) -> bool {
    unit.wrapping_sub(u32::from(b'0')) < 10
}

/// Whether a unit is whitespace (Unicode White_Space, as Rust's `char::is_whitespace`); a
/// lone surrogate is not.
#[inline]
pub fn is_whitespace(unit: u32) -> bool {
    classify(unit) == UnitClass::Whitespace
}

/// What one unit counts as when a block's class is decided.
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
pub enum BlockClass {
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
    /// A run of packed-data chars inside a payload (see [`BlockClass::of_run`]): base64 in a data
    /// URI, a source map's mappings.
    Payload,
}

impl BlockClass {
    pub const ALL: [BlockClass; 6] = [
        BlockClass::Whitespace,
        BlockClass::SingleChar,
        BlockClass::Text,
        BlockClass::Code,
        BlockClass::Table,
        BlockClass::Payload,
    ];

    /// Classifies a line of code points (token ids are classified the same way, as if they were
    /// code points; callers of the token API choose rules to suit).
    pub fn of(units: &[u32]) -> BlockClass {
        let mut counts = ClassCounts::default();
        for &u in units {
            counts.add(u);
        }
        counts.class()
    }

    /// Classifies a line's content (see [`ClassCounts::line_class`]).
    pub fn of_line(units: &[u32]) -> BlockClass {
        let mut counts = ClassCounts::default();
        units.iter().for_each(|&u| counts.add(u));
        counts.line_class()
    }

    /// Classifies the block of a periodic run, whose units are all at hand: on top of what
    /// [`BlockClass::of`] counts, a block of words or code made of few distinct units (at most
    /// [`TABLE_ALPHABET`], fewer than one per [`VARIETY`] units) is a table row, and so is a
    /// block of code of [`TABLE_LINES`] lines or more with no letters of words: rows of
    /// numbers, as in a layout diagram of a tensor's threads (`[ 0   1   2   3  ...... 30  31 ]`
    /// four times per warp, 584 units a copy, in triton's TritonGPUAttrDefs.td). Prose and code
    /// have a new char every few units and draw on more than a dozen; a looping paragraph or
    /// code block has words.
    pub fn of_block<T: Copy + Into<u32>>(units: &[T]) -> BlockClass {
        let mut counts = ClassCounts::default();
        units.iter().for_each(|&u| counts.add(u.into()));
        let class = counts.class();
        if matches!(class, BlockClass::Text | BlockClass::Code) && units.len() > VARIETY {
            let mut distinct: Vec<u32> = units.iter().map(|&u| u.into()).collect();
            distinct.sort_unstable();
            distinct.dedup();
            if distinct.len() <= TABLE_ALPHABET && distinct.len() * VARIETY < units.len() {
                return BlockClass::Table;
            }
        }
        // Counted only for a block of code without letters of words: most blocks are not.
        let lines = || units.iter().filter(|&&u| u.into() == u32::from('\n')).count();
        if class == BlockClass::Code && counts.word_letters() == 0 && lines() >= TABLE_LINES {
            return BlockClass::Table;
        }
        class
    }

    /// The class of the run of `block` that starts right after `before` (which holds at least
    /// [`PACKED_CONTEXT`] units where the text has them). The unit before a run says what it
    /// repeats inside of: a run right after `[` or `(` is a list of items (`tuple[int, int,
    /// ...]` in a type stub) and counts as code; a block of packed-data chars after
    /// [`PACKED_CONTEXT`] of them is part of a payload (base64 in a data URI, a source map's
    /// mappings) and needs `payload_span`.
    pub fn of_run<T: Copy + Into<u32>>(block: &[T], before: &[T]) -> BlockClass {
        let packed = |units: &[T]| units.iter().all(|&u| is_packed(u.into()));
        if before.len() >= PACKED_CONTEXT && packed(&before[before.len() - PACKED_CONTEXT..]) && packed(block) {
            return BlockClass::Payload;
        }
        let class = BlockClass::of_block(block);
        let in_list = before.last().is_some_and(|&u| matches!(char::from_u32(u.into()), Some('[' | '(')));
        if class == BlockClass::Text && in_list {
            BlockClass::Code
        } else {
            class
        }
    }
}

/// A table row has fewer than one distinct unit per this many units, and at most
/// [`TABLE_ALPHABET`] distinct units (see [`BlockClass::of_block`]): `/.notdef ` eight times on
/// a line (10 distinct in 72), a line of 64 `M`s (5 in 72), a minified array's row (7 in 44).
/// A sentence of 137 units a model looped on (a chess analysis, docs/tuning.md) has 20.
pub const VARIETY: usize = 6;
pub const TABLE_ALPHABET: usize = 11;

/// Line breaks in a periodic block of code without letters of words that make it a table of
/// numbers (see [`BlockClass::of_block`]): a row of numbers repeated on its own is a short block
/// of code (` -1.000000` 164 times after a timestamp, tests/data/smollm2_minus_one_loop.txt, is a
/// model's loop).
pub const TABLE_LINES: usize = 2;

/// Units of packed data (see [`BlockClass::of_run`]) before a run that make it part of a payload:
/// prose and code break every few dozen units with a space or a bracket.
pub const PACKED_CONTEXT: usize = 64;

/// A char of packed data: base64 (`A-Z a-z 0-9 + /`) and the separators of a source map's
/// mappings (`,` `;`).
fn is_packed(unit: u32) -> bool {
    unit < 0x80 && ((unit as u8).is_ascii_alphanumeric() || matches!(unit as u8, b'+' | b'/' | b',' | b';'))
}

/// Running counts from which a [`BlockClass`] is decided, so a line can be classified as it streams.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClassCounts {
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

/// The set of more units than a table row holds (see [`ClassCounts::see`]).
const MANY_UNITS: u128 = u128::MAX;

/// The ASCII whitespace units, one bit each (see [`is_ascii_space`]).
const ASCII_SPACES: u128 = 1 << b' ' | 0x1f << 0x09;

/// A mark of code, one of the ASCII chars words do not hold: `_ ( ) [ ] { } < > = ; " ' \``. As
/// compares (a bit looked up in a 128-bit mask, a shift across two words, cost the counting pass
/// of [`ClassCounts::add_all`] a third more instructions).
pub(crate) const fn is_code_mark(byte: u8) -> bool {
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

impl ClassCounts {
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

    /// The class of a line (its content, without trailing whitespace): as [`ClassCounts::class`],
    /// but a line of words with no whitespace inside, nothing beyond ASCII and a mark of code
    /// is an identifier or a statement (`    PARSE_UNSIGNED_ITERATION(uint64_t);`) and counts as
    /// code. A one-word line (`Yes,`) stays a line of words. A line is a table row as the block
    /// of the line and its newline would be: with at least as much whitespace, its newline
    /// counted, as visible units (one short item per indented line: `    None,` 151 times in
    /// idna's uts46data.py), or, if all ASCII, with few distinct units (at most
    /// [`TABLE_ALPHABET`] visible ones and its whitespace as one, fewer than one per [`VARIETY`]
    /// units: `// STOP STOP STOP ...` 18 times in torch's cpp_custom_type_hack.h,
    /// `/.notdef /.notdef ...` 8 times in vim's PostScript encodings).
    pub fn line_class(&self) -> BlockClass {
        let distinct = u64::from(self.ascii_seen.count_ones()) + u64::from(self.inner_whitespace > 0);
        let few_distinct = self.non_ascii == 0
            && distinct <= TABLE_ALPHABET as u64
            && distinct * (VARIETY as u64) < self.visible + self.whitespace;
        let indented_item = self.whitespace + 1 >= self.visible;
        match self.class() {
            BlockClass::Text | BlockClass::Code if few_distinct || indented_item => BlockClass::Table,
            BlockClass::Text if self.inner_whitespace == 0 && self.non_ascii == 0 && self.code_marks > 0 => {
                BlockClass::Code
            }
            class => class,
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

    pub fn class(&self) -> BlockClass {
        if self.visible == 0 {
            BlockClass::Whitespace
        } else if !self.mixed_visible {
            BlockClass::SingleChar
        } else if self.whitespace >= self.visible {
            BlockClass::Table
        } else if 4 * self.word_letters() >= 3 * self.visible && 2 * self.whitespace <= self.visible {
            BlockClass::Text
        } else {
            BlockClass::Code
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    #[test]
    fn classes() {
        assert_eq!(BlockClass::of(&units("  \n\t")), BlockClass::Whitespace);
        assert_eq!(BlockClass::of(&units("-")), BlockClass::SingleChar);
        assert_eq!(BlockClass::of(&units("= ")), BlockClass::SingleChar);
        assert_eq!(BlockClass::of(&units("loadTools.")), BlockClass::Text);
        assert_eq!(BlockClass::of(&units("人民法院 ")), BlockClass::Text);
        assert_eq!(BlockClass::of(&units("Привет, ")), BlockClass::Text);
        assert_eq!(BlockClass::of(&units("    '\\ufffe'\n")), BlockClass::Code);
        assert_eq!(BlockClass::of(&units("0, ")), BlockClass::Code);
        // Indented lines read as code, however wordy: 26 of these are in CPython's email tests.
        assert_eq!(BlockClass::of(&units("\n        text/plain")), BlockClass::Code);
        assert_eq!(BlockClass::of(&units("it ")), BlockClass::Text);
        assert_eq!(BlockClass::of(&units("|---")), BlockClass::Code);
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
        assert_eq!(BlockClass::of_line(&banner), BlockClass::Table);
        let mut sliced = ClassCounts::default();
        banner.chunks(7).for_each(|slice| sliced.add_all(slice));
        assert_eq!(sliced.line_class(), BlockClass::Table);
        assert_eq!(BlockClass::of_line(&units(&"/.notdef ".repeat(8))), BlockClass::Table);
        // An indented item: as much whitespace as visible units once its newline is counted.
        assert_eq!(BlockClass::of_line(&units("    None,")), BlockClass::Table);
        assert_eq!(BlockClass::of_line(&units("- call read_file(path='src/3.py')")), BlockClass::Code);
        // Lines of words, short lines of one word, statements and non-ASCII lines are not.
        assert_eq!(BlockClass::of_line(&units("      cssAddon: true,")), BlockClass::Text);
        assert_eq!(BlockClass::of_line(&units("Yes,")), BlockClass::Text);
        assert_eq!(BlockClass::of_line(&units(&"人民 ".repeat(20))), BlockClass::Text);
        // Rows of numbers over several lines are a table; one row alone is code (a model's
        // loop: tests/data/smollm2_minus_one_loop.txt).
        let rows = "[ 0   1   2   3  ...... 30  31 ]\n[ 32  33  34  35 ...... 62  63 ]\n";
        assert_eq!(BlockClass::of_block(&units(rows)), BlockClass::Table);
        assert_eq!(BlockClass::of_block(&units(" -1.000000")), BlockClass::Code);
        assert_eq!(BlockClass::of_block(&units("n[0]=1;\nm[1]=2;\n")), BlockClass::Code);
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
                let (mut slices, mut one_by_one) = (ClassCounts::default(), ClassCounts::default());
                slices.add_all(&case[..split]);
                slices.add_all(&case[split..]);
                case.iter().for_each(|&u| one_by_one.add(u));
                assert_eq!(format!("{slices:?}"), format!("{one_by_one:?}"), "{case:?} split at {split}");
            }
        }
    }
}
