//! The counter-template rule, one line end at a time: a model stuck on a template where only a
//! number advances (`1. test.py`, `2. test.py`, ...). Two lines continue a counter streak when
//! they are equal once every maximal run of ASCII digits is masked, and from the first to the
//! second every number is unchanged or one up, at least one of them one up (a line equal to the
//! one before is no counter step: that is `identical_lines`), and no number that goes up is the
//! tail of an identifier or an index (right after a letter, `_` or `[`: `value_7`, `x1`, `0x1f`,
//! `out[7]` are generated code and data). Blank lines do not break a streak; trailing whitespace is ignored. A template
//! without a letter never makes a finding (rows of numbers: a CSV column counting up).
//!
//! Numbers are compared as integers of any length, on their digit strings: leading zeros do not
//! count (`099` to `100` is one up, `7` to `07` unchanged), and a carry is worked out on the
//! digits (`199` to `200`), so no number is too long to compare.
//!
//! Only lines that hold a digit and fit `max_long_period` units (newline excluded, trailing
//! whitespace included) can be counter lines: such a line is always whole in the window at its
//! newline, whatever the chunking. The streak's first and latest lines are read back from the
//! window, and copied out of it only if they would leave it (blank lines between counter lines,
//! a long streak's first line), so a stream keeps at most two lines of `max_long_period` units.
//! Any other non-blank line breaks the streak. Lines without a digit, most of any text, cost a
//! few word operations on the piece's digit bits.

use crate::lanes::{Unit, LANES};
use crate::rules::{classify, is_whitespace, Rules, UnitClass};
use crate::window::{Window, PIECE};

/// What the end of a non-blank line did to the streak of counter lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterEvent {
    /// The line continues the streak (before it reached its rule, or after).
    Continued,
    /// The line does not continue the streak that was running (it may start a new one).
    Broken,
    /// The streak just reached the lines its rule needs.
    Reached { start: u64, repeats: u64 },
}

/// The run of counter lines the latest lines belong to.
#[derive(Clone, Copy, Debug)]
struct Streak {
    count: u64,
    /// The lines its template needs, once the streak is long enough to ask.
    required: Option<u64>,
}

/// A line of the streak: where it starts and its content's length (trailing whitespace
/// dropped), read from the window while it holds the line, from `copy` once it had to leave.
#[derive(Clone, Debug, Default)]
struct Held {
    start: u64,
    len: u64,
    /// Units of the content that are no digit: two lines equal once their digit runs are
    /// masked have as many, so lines that differ in it are told apart without being read.
    non_digits: u64,
    copied: bool,
    copy: Vec<u32>,
}

impl Held {
    fn set(&mut self, start: u64, len: u64, non_digits: u64) {
        (self.start, self.len, self.non_digits, self.copied) = (start, len, non_digits, false);
    }

    /// Copies the line out of the window if it starts before `leaving`.
    fn keep<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        if !self.copied && self.start < leaving {
            let (older, newer) = window.slices(self.start, self.start + self.len);
            self.copy.clear();
            self.copy.extend(older.iter().chain(newer).map(|&unit| unit.into()));
            self.copied = true;
        }
    }

    fn units<T: Unit>(&self, window: &Window<T>) -> Vec<u32> {
        if self.copied {
            self.copy.clone()
        } else {
            window.units(self.start, self.start + self.len)
        }
    }
}

#[derive(Clone, Debug)]
pub struct Counters {
    rules: Rules,
    streak: Option<Streak>,
    /// The streak's first line, and its latest (once it has two).
    first: Held,
    latest: Held,
}

impl Counters {
    pub fn new(rules: &Rules) -> Counters {
        Counters { rules: *rules, streak: None, first: Held::default(), latest: Held::default() }
    }

    pub fn heap_bytes(&self) -> usize {
        (self.first.copy.capacity() + self.latest.copy.capacity()) * std::mem::size_of::<u32>()
    }

    /// Before units are appended to `window`: copies the streak's lines that would leave it
    /// (`leaving` is the first position still held after the append).
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        if let Some(streak) = self.streak {
            self.first.keep(window, leaving);
            if streak.count > 1 {
                self.latest.keep(window, leaving);
            }
        }
    }

    /// Where the streak's first line starts, and its content (trailing whitespace dropped).
    pub fn first_line<T: Unit>(&self, window: &Window<T>) -> (u64, Vec<u32>) {
        (self.first.start, self.first.units(window))
    }

    /// The non-blank line from `start`, whose content (trailing whitespace dropped) is
    /// `content_len` units, ended at the newline `x` of the piece `digits` marks: what it did
    /// to the streak, if one was running or it reached its rule.
    #[inline(always)]
    pub fn on_line<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        x: u64,
        digits: &PieceDigits,
        window: &Window<T>,
    ) -> Option<CounterEvent> {
        let fits = x - start <= u64::from(self.rules.max_long_period);
        let digit_units = if fits { digits.count(start, start + content_len, window) } else { 0 };
        if digit_units > 0 {
            return self.on_digit_line(start, content_len, content_len - digit_units, window);
        }
        self.streak.take().map(|_| CounterEvent::Broken)
    }

    #[inline(never)]
    fn on_digit_line<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        non_digits: u64,
        window: &Window<T>,
    ) -> Option<CounterEvent> {
        let Some(streak) = &mut self.streak else {
            self.new_streak(start, content_len, non_digits);
            return None;
        };
        let before = if streak.count == 1 { &self.first } else { &self.latest };
        if before.non_digits != non_digits {
            self.new_streak(start, content_len, non_digits);
            return Some(CounterEvent::Broken);
        }
        if !before.copied {
            // Most lines differ from the one before at a unit that is no digit in either, found
            // a vector at a time: they cannot count on (a number that counts on differs first
            // at a digit, or right after its zeros: `0` to `01`).
            let common = content_len.min(before.len);
            let differ = window.first_break(start - before.start, start, start + common) - start;
            if differ < common && !is_digit(window.at(start + differ)) && !is_digit(window.at(before.start + differ)) {
                self.new_streak(start, content_len, non_digits);
                return Some(CounterEvent::Broken);
            }
        }
        let line = read(window.slices(start, start + content_len));
        let (len, before_len) = (content_len as usize, before.len as usize);
        let counts = if before.copied {
            counts_on_by(before_len, |i| before.copy[i], len, line)
        } else {
            counts_on_by(before_len, read(window.slices(before.start, before.start + before.len)), len, line)
        };
        if !counts {
            self.new_streak(start, content_len, non_digits);
            return Some(CounterEvent::Broken);
        }
        streak.count += 1;
        self.latest.set(start, content_len, non_digits);
        if streak.count < u64::from(self.rules.counter_min_lines) {
            return Some(CounterEvent::Continued);
        }
        let required = *streak.required.get_or_insert_with(|| {
            let (older, newer) = window.slices(start, start + content_len);
            let units: Vec<u32> = older.iter().chain(newer).map(|&unit| unit.into()).collect();
            required_lines(&self.rules, &units)
        });
        if streak.count == required {
            return Some(CounterEvent::Reached { start: self.first.start, repeats: streak.count });
        }
        Some(CounterEvent::Continued)
    }

    /// The line from `start` starts a streak of its own.
    fn new_streak(&mut self, start: u64, content_len: u64, non_digits: u64) {
        self.first.set(start, content_len, non_digits);
        self.streak = Some(Streak { count: 1, required: None });
    }
}

/// How many of `units` are ASCII digits, 16 at a time.
#[inline(never)]
fn count_digits<T: Unit>(units: &[T]) -> u64 {
    let chunks = units.chunks_exact(LANES);
    let rest = chunks.remainder();
    let whole: u32 = chunks
        .map(|chunk| chunk.try_into().expect("LANES"))
        .map(|chunk: &[T; LANES]| T::digits(chunk).count_ones())
        .sum();
    u64::from(whole) + rest.iter().filter(|&&unit| is_digit(unit.into())).count() as u64
}

/// Unit `i` of a line held in the window as one or two slices of its ring.
#[inline(always)]
fn read<'a, T: Unit>((older, newer): (&'a [T], &'a [T])) -> impl Fn(usize) -> u32 + 'a {
    move |i| if i < older.len() { older[i].into() } else { newer[i - older.len()].into() }
}

fn is_digit(unit: u32) -> bool {
    unit.wrapping_sub(u32::from(b'0')) < 10
}

/// The ASCII digits of a piece of units, one bit each: marked once per piece (16 units to a
/// vector compare), so that a line without a digit costs a few word operations.
pub struct PieceDigits {
    /// Where the piece starts in the stream.
    first: u64,
    words: [u64; PIECE / 64],
}

impl PieceDigits {
    /// Marks the digits of `piece`, appended from `first` on.
    #[inline(always)]
    pub fn new<S: Unit>(piece: &[S], first: u64) -> PieceDigits {
        let mut words = [0; PIECE / 64];
        for (word, units) in words.iter_mut().zip(piece.chunks(64)) {
            *word = match <&[S; 64]>::try_from(units) {
                Ok(units) => (0..64).step_by(LANES).fold(0, |word, i| {
                    word | u64::from(S::digits(units[i..i + LANES].try_into().expect("LANES"))) << i
                }),
                Err(_) => {
                    units.iter().enumerate().fold(0, |bits, (i, &unit)| bits | u64::from(is_digit(unit.into())) << i)
                }
            };
        }
        PieceDigits { first, words }
    }

    /// How many of units `from..to` are digits: those of the piece from its bits, those before
    /// it from the window.
    #[inline(always)]
    fn count<T: Unit>(&self, from: u64, to: u64, window: &Window<T>) -> u64 {
        let before = if from < self.first {
            let (older, newer) = window.slices(from, self.first.min(to));
            count_digits(older) + count_digits(newer)
        } else {
            0
        };
        let in_piece = if to > self.first {
            self.count_in_piece((from.max(self.first) - self.first) as usize, (to - self.first) as usize)
        } else {
            0
        };
        before + in_piece
    }

    #[inline(always)]
    fn count_in_piece(&self, from: usize, to: usize) -> u64 {
        if from >= to {
            return 0;
        }
        let (first_word, last_word) = (from / 64, (to - 1) / 64);
        let low = u64::MAX << (from % 64);
        let high = u64::MAX >> (63 - (to - 1) % 64);
        if first_word == last_word {
            return u64::from((self.words[first_word] & low & high).count_ones());
        }
        let middle: u32 = self.words[first_word + 1..last_word].iter().map(|word| word.count_ones()).sum();
        u64::from((self.words[first_word] & low).count_ones() + middle + (self.words[last_word] & high).count_ones())
    }
}

/// The lines a counter streak of `line`'s template needs: none can reach it (`u64::MAX`) unless
/// the template holds a letter, so rows of numbers (a CSV column counting up, code tables, `7,`
/// lines in generated parsers) are never counters. The template's length counts each digit run
/// as one unit and leaves out the indentation, which is layout: an indented line of code
/// (`        base + 2 * step,` 61 times in torch's vec512_int.h) needs as many lines as its
/// content alone.
pub(crate) fn required_lines(rules: &Rules, line: &[u32]) -> u64 {
    let mut template_len = 0;
    let mut letter = false;
    let mut after_digit = false;
    let indent = line.iter().take_while(|&&unit| is_whitespace(unit)).count();
    for &unit in &line[indent..] {
        let digit = is_digit(unit);
        template_len += u64::from(!(digit && after_digit));
        letter |= !digit && classify(unit) == UnitClass::Letter;
        after_digit = digit;
    }
    if letter {
        rules.required_counter_lines(template_len)
    } else {
        u64::MAX
    }
}

/// Whether `after` follows `before` in a counter streak: equal outside their digit runs, with as
/// many runs, each number unchanged or one up, at least one one up, and none that goes up right
/// after a letter, `_` or `[`.
pub(crate) fn counts_on<S: Unit>(before: &[S], after: &[S]) -> bool {
    counts_on_by(before.len(), |i| before[i].into(), after.len(), |i| after[i].into())
}

/// [`counts_on`] over lines read a unit at a time (from the window or a copy), up to the first
/// unit that tells them apart: most lines differ from the one before within a few units.
#[inline(always)]
fn counts_on_by(
    before_len: usize,
    before: impl Fn(usize) -> u32,
    after_len: usize,
    after: impl Fn(usize) -> u32,
) -> bool {
    let (mut i, mut j) = (0, 0);
    let mut advanced = false;
    while i < before_len && j < after_len {
        let (a, b) = (before(i), after(j));
        if is_digit(a) && is_digit(b) {
            let x = Digits::at(&before, i, before_len);
            let y = Digits::at(&after, j, after_len);
            if x.followed_by(&y) {
                // A number that counts is no identifier's tail (`value_7`, `x1`, `0x1f`) nor an
                // index (`out[7]`): numbered names and subscripts are generated code and data
                // (CUDA's generated headers count `"=r"(__out_var[N]),` to 127), not a template
                // a model is stuck on.
                if i > 0 && names_or_indexes(before(i - 1)) {
                    return false;
                }
                advanced = true;
            } else if !x.equals(&y) {
                return false;
            }
            (i, j) = (x.end, y.end);
        } else if a == b {
            (i, j) = (i + 1, j + 1);
        } else {
            return false;
        }
    }
    advanced && i == before_len && j == after_len
}

/// Whether a number right after `unit` is part of a name or an index: a letter, `_` or `[`.
fn names_or_indexes(unit: u32) -> bool {
    unit == u32::from(b'_') || unit == u32::from(b'[') || classify(unit) == UnitClass::Letter
}

/// A maximal run of digits, read through `unit`: its significant digits (leading zeros do not
/// count, so zero has none) are `from..end`.
struct Digits<'a, F: Fn(usize) -> u32> {
    unit: &'a F,
    from: usize,
    end: usize,
}

impl<'a, F: Fn(usize) -> u32> Digits<'a, F> {
    /// The run that starts at `start` (a digit) in a line of `len` units.
    fn at(unit: &'a F, start: usize, len: usize) -> Self {
        let end = (start..len).find(|&k| !is_digit(unit(k))).unwrap_or(len);
        let from = (start..end).find(|&k| unit(k) != u32::from(b'0')).unwrap_or(end);
        Digits { unit, from, end }
    }

    fn len(&self) -> usize {
        self.end - self.from
    }

    fn digit(&self, k: usize) -> u32 {
        (self.unit)(self.from + k)
    }

    fn equals<G: Fn(usize) -> u32>(&self, other: &Digits<'_, G>) -> bool {
        self.len() == other.len() && (0..self.len()).all(|k| self.digit(k) == other.digit(k))
    }

    /// Whether `other` is this number plus one, worked out on the digits: the last digit below
    /// 9 goes one up and the nines after it become zeros (all nines: a 1 and as many zeros).
    fn followed_by<G: Fn(usize) -> u32>(&self, other: &Digits<'_, G>) -> bool {
        let (zero, one, nine) = (u32::from(b'0'), u32::from(b'1'), u32::from(b'9'));
        let n = self.len();
        let nines = (0..n).rev().take_while(|&k| self.digit(k) == nine).count();
        if nines == n {
            return other.len() == n + 1 && other.digit(0) == one && (1..=n).all(|k| other.digit(k) == zero);
        }
        let at = n - nines - 1;
        other.len() == n
            && (0..at).all(|k| self.digit(k) == other.digit(k))
            && other.digit(at) == self.digit(at) + 1
            && (at + 1..n).all(|k| other.digit(k) == zero)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::DEFAULT_RULES;

    fn units(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    fn follows(before: &str, after: &str) -> bool {
        counts_on(&units(before), &units(after))
    }

    #[test]
    fn numbers_step_by_one_as_integers() {
        assert!(follows("1. test.py", "2. test.py"));
        assert!(follows("9. a", "10. a"));
        assert!(follows("099 a", "100 a"));
        assert!(follows("0 a", "1 a"));
        assert!(follows("a 007", "a 8"));
        assert!(follows("x 199 y", "x 200 y"));
        let long = "1".repeat(40);
        assert!(follows(&format!("n {long}9"), &format!("n {}20", &long[1..])));
        assert!(!follows(&format!("n {long}9"), &format!("n {long}0")));
        assert!(follows(&format!("n {}", "9".repeat(40)), &format!("n 1{}", "0".repeat(40))));
        // Several numbers: each unchanged or one up, at least one up.
        assert!(follows("Server 1: port 80", "Server 2: port 80"));
        assert!(follows("(12, 12)", "(13, 13)"));
        assert!(follows("row 3 col 7", "row 3 col 8"));
    }

    #[test]
    fn what_does_not_count_on() {
        // The same line, a step of two or down, another template, another count of numbers.
        assert!(!follows("1. a", "1. a"));
        assert!(!follows("1. a", "3. a"));
        assert!(!follows("2. a", "1. a"));
        assert!(!follows("1. a", "2. b"));
        assert!(!follows("1. a", "2. a 1"));
        assert!(!follows("1 2", "2 4"));
        assert!(!follows("a1", "a2 "));
        assert!(!follows("10", "11x"));
        assert!(!follows("01 a", "02 a."));
        // Numbered identifiers do not count: `value_7`, `x1`, hex.
        assert!(!follows("let value_7 = f(7);", "let value_8 = f(8);"));
        assert!(!follows("x1 = a", "x2 = a"));
        assert!(!follows("0x1f, a", "0x2f, a"));
        assert!(!follows("  \"=r\"(__out_var[1]),", "  \"=r\"(__out_var[2]),"));
        assert!(follows("let value_7 = f(7);", "let value_7 = f(8);"));
    }

    #[test]
    fn templates_without_letters_are_never_counters() {
        let r = DEFAULT_RULES;
        assert_eq!(required_lines(&r, &units("17,")), u64::MAX);
        assert_eq!(required_lines(&r, &units("123\t456")), u64::MAX);
        // `- N. Cleaning:` is 14 units (a digit run counts as one): 1600 / 15 lines.
        assert_eq!(required_lines(&r, &units("- 155. Cleaning:")), 107);
        assert_eq!(required_lines(&r, &units(&format!("1. {}", "word ".repeat(20)))), 40);
        // Indentation does not count: `base + N * step,` is 16 units.
        assert_eq!(required_lines(&r, &units("        base + 2 * step,")), 95);
    }
}
