//! The counter-template rule, one line end at a time: a model stuck on a template where only a
//! number advances (`1. test.py`, `2. test.py`, ...). Two lines continue a counter streak when
//! they are equal once every maximal run of ASCII digits is masked, and from the first to the
//! second every number is unchanged or one up, at least one of them one up (a line equal to the
//! one before is no counter step: that is `identical_lines`), and no number that goes up is the
//! tail of an identifier or an index (see [`part_of_a_name`]: `value_7`, `x1`, `0x1f`, `out[7]`
//! are generated code and data; `backup7` and `assistant57`, a number after a word, count). Blank
//! lines do not break a streak; trailing whitespace is ignored. In a template without a letter
//! every number must go one up (the fraction of a decimal aside: `$1.5`, `$2.5`): `(7)`, bare
//! numbers and `7. 8. 9.` count, a CSV row whose counter column is followed by other values
//! (`7,0,0`) does not.
//!
//! How many lines a streak needs depends on its template (see [`required_lines`]): a template of
//! words, or one without a letter, `counter_min_lines` or `counter_span` units of lines; code and
//! markup `code_counter_min_lines` or `code_counter_span`.
//!
//! Numbers are compared on their digit strings, so no number is too long to compare: a number is
//! unchanged if its digits are, and one up if they are its digits plus one, worked out with the
//! carry and keeping its width (`099` to `100`, `9` to `10`; `7` to `07` is neither: a model
//! counting keeps the form of its numbers).
//!
//! Only lines that fit `max_long_period` units (newline excluded, trailing whitespace included)
//! can be counter lines: such a line is always whole in the window at its newline, whatever the
//! chunking. The line before and the streak's first line are read back from the window, and
//! copied out of it only if they would leave it (blank lines between, a long streak's first
//! line), so a stream keeps at most two lines of `max_long_period` units. Any other non-blank
//! line breaks the streak, and so does a line more than two units longer than the one before
//! (more than two numbers that carry at once: `(9, 9, 9)` to `(10, 10, 10)` starts again).
//!
//! What a line costs: a line that counts on from the one before is no shorter (a number keeps
//! its width or gains a digit), and the two first differ at a digit in both (the last digit
//! that goes up, or the first of a number of nines). So a line shorter or much longer than the
//! one before, or that first differs from it at a unit no digit in either (found 16 units at a
//! time), most lines of any text, is told apart without a digit being read.

use crate::classes::{classify, is_code_mark, is_whitespace, UnitClass};
use crate::lanes::{Unit, LANES};
use crate::rules::Rules;
use crate::window::Window;

/// What the end of a non-blank line did to the streak of counter lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterEvent {
    /// The line continues the streak (before it reached its rule, or after).
    Continued,
    /// The line does not continue the streak that was running (it may start a new one).
    Broken,
    /// The streak just reached the lines its rule needs (where it starts and its lines:
    /// [`Counters::first_line`], [`Counters::lines`]).
    Reached,
}

/// The run of counter lines the latest lines belong to.
#[derive(Clone, Copy, Debug)]
struct Streak {
    count: u64,
    /// The lines its template needs, once the streak is long enough to ask.
    required: Option<u64>,
}

/// A line: where it starts, its content's length (trailing whitespace dropped) and where it
/// ends (its newline), read from the window while it holds the line, from `copy` once it had
/// to leave. Setting one costs three stores, as every non-blank line of a text is set.
#[derive(Clone, Debug)]
struct Held {
    start: u64,
    len: u64,
    end: u64,
    /// The start of the line `copy` holds (`u64::MAX`: none).
    copy_of: u64,
    copy: Vec<u32>,
}

impl Held {
    /// No line yet: no line is short enough to count on from it.
    fn none() -> Held {
        Held { start: 0, len: NO_LINE, end: 0, copy_of: u64::MAX, copy: Vec::new() }
    }

    fn set(&mut self, start: u64, len: u64, end: u64) {
        (self.start, self.len, self.end) = (start, len, end);
    }

    fn copied(&self) -> bool {
        self.copy_of == self.start
    }

    /// Whether the line fits `max_long_period` units (newline excluded, trailing whitespace
    /// included): a counter line.
    fn fits(&self, rules: &Rules) -> bool {
        self.end - self.start <= u64::from(rules.max_long_period)
    }

    /// Copies the line out of the window if it starts before `leaving`.
    #[inline(never)]
    fn keep<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        if !self.copied() && self.start < leaving {
            let (older, newer) = window.slices(self.start, self.start + self.len);
            self.copy.clear();
            self.copy.extend(older.iter().chain(newer).map(|&unit| unit.into()));
            self.copy_of = self.start;
        }
    }

    fn units<T: Unit>(&self, window: &Window<T>) -> Vec<u32> {
        if self.copied() {
            self.copy.clone()
        } else {
            window.units(self.start, self.start + self.len)
        }
    }
}

#[derive(Clone, Debug)]
pub struct Counters {
    rules: Rules,
    /// The streak, once two lines count on.
    streak: Option<Streak>,
    /// The streak's first line.
    first: Held,
    /// The latest non-blank line.
    previous: Held,
}

/// The length of no line: no line is as long or a few units longer.
const NO_LINE: u64 = u64::MAX / 2;

impl Counters {
    pub fn new(rules: &Rules) -> Counters {
        Counters { rules: *rules, streak: None, first: Held::none(), previous: Held::none() }
    }

    pub fn heap_bytes(&self) -> usize {
        (self.first.copy.capacity() + self.previous.copy.capacity()) * std::mem::size_of::<u32>()
    }

    /// Before units are appended to `window`: copies the lines a streak may still compare or
    /// report that would leave it (`leaving` is the first position still held after the append).
    /// Inlined: a stream fed in small deltas comes here for every delta, and nearly always
    /// neither line is leaving (one compare each).
    #[inline(always)]
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        if self.previous.start < leaving && self.previous.len != NO_LINE && self.previous.fits(&self.rules) {
            self.previous.keep(window, leaving);
        }
        if self.first.start < leaving && self.streak.is_some() {
            self.first.keep(window, leaving);
        }
    }

    /// The lines of the streak so far.
    pub fn lines(&self) -> u64 {
        self.streak.map_or(0, |streak| streak.count)
    }

    /// Where the streak's first line starts, and its content (trailing whitespace dropped).
    pub fn first_line<T: Unit>(&self, window: &Window<T>) -> (u64, Vec<u32>) {
        (self.first.start, self.first.units(window))
    }

    /// The non-blank line from `start`, whose content (trailing whitespace dropped) is
    /// `content_len` units, ended at the newline `x`: what it did to the streak, if one was
    /// running or it reached its rule.
    #[inline(always)]
    pub fn on_line<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        x: u64,
        window: &Window<T>,
    ) -> Option<CounterEvent> {
        // Lengths first: most lines are told apart by them. Whether both lines fit, which
        // lines as long as each other nearly always do, is asked after.
        let from = if content_len.wrapping_sub(self.previous.len) <= MAX_GAIN as u64
            && x - start <= u64::from(self.rules.max_long_period)
            && self.previous.fits(&self.rules)
        {
            if self.previous.copied() {
                Some(0)
            } else {
                first_difference_at_digits(&self.previous, start, window)
            }
        } else {
            None
        };
        let event = match from {
            Some(from) => self.on_candidate(start, content_len, from, window),
            None => self.streak_broken(),
        };
        self.previous.set(start, content_len, x);
        event
    }

    /// The line does not count on from the one before: the streak, if one was running, is over.
    /// (Tested before it is cleared, which most lines, in no streak, then leave alone.)
    #[inline(always)]
    fn streak_broken(&mut self) -> Option<CounterEvent> {
        self.streak.is_some().then(|| {
            self.streak = None;
            CounterEvent::Broken
        })
    }

    /// The line may count on from the one before (no shorter, not by more than `MAX_GAIN`, equal
    /// to it before `from`): compares them digit by digit from there.
    #[inline(never)]
    fn on_candidate<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        from: usize,
        window: &Window<T>,
    ) -> Option<CounterEvent> {
        let before = &self.previous;
        let line = read(window.slices(start, start + content_len));
        let (len, before_len) = (content_len as usize, before.len as usize);
        let counts = if before.copied() {
            counts_on_by(before_len, |i| before.copy[i], len, line, from)
        } else {
            counts_on_by(before_len, read(window.slices(before.start, before.start + before.len)), len, line, from)
        };
        if !counts {
            return self.streak_broken();
        }
        let streak = match &mut self.streak {
            Some(streak) => {
                streak.count += 1;
                streak
            }
            None => {
                // The line before starts the streak (its copy, if it had to leave the window,
                // goes with it; the line's own is taken up at the end of `on_line`).
                std::mem::swap(&mut self.first, &mut self.previous);
                self.streak.insert(Streak { count: 2, required: None })
            }
        };
        if streak.count < u64::from(self.rules.counter_min_lines.min(self.rules.code_counter_min_lines)) {
            return Some(CounterEvent::Continued);
        }
        let required = *streak.required.get_or_insert_with(|| {
            let (older, newer) = window.slices(start, start + content_len);
            let units: Vec<u32> = older.iter().chain(newer).map(|&unit| unit.into()).collect();
            required_lines(&self.rules, &units)
        });
        if streak.count == required {
            return Some(CounterEvent::Reached);
        }
        Some(CounterEvent::Continued)
    }
}

/// A line can be at most this many units longer than the one before and count on from it: two
/// numbers that carry at once (`(9, 9)` to `(10, 10)`). With more, the streak starts again.
pub(crate) const MAX_GAIN: usize = 2;

/// If the line from `start`, no shorter than `before` (held in the window), first differs from
/// it at a unit that is a digit in both, in a number that may count (not [`part_of_a_name`]):
/// where that number starts. Their first 16 units are compared here, where most
/// lines differ (a call to compare them cost more than the rest of the rule's check).
#[inline(always)]
fn first_difference_at_digits<T: Unit>(before: &Held, start: u64, window: &Window<T>) -> Option<usize> {
    let (line, prior) = (window.lanes(start), window.lanes(before.start));
    let held = u32::MAX >> (32 - before.len.min(LANES as u64));
    let differ = !T::equal_pairs(line, prior) & held;
    if differ == 0 {
        return if before.len > LANES as u64 { first_difference_after_lanes(before, start, window) } else { None };
    }
    let at = differ.trailing_zeros() as usize;
    if !is_digit(line[at].into()) || !is_digit(prior[at].into()) {
        return None;
    }
    let from = at - line[..at].iter().rev().take_while(|&&unit| is_digit(unit.into())).count();
    (!part_of_a_name(&|k| line[k].into(), from)).then_some(from)
}

/// [`first_difference_at_digits`] for lines whose first 16 units are equal (indentation).
#[inline(never)]
fn first_difference_after_lanes<T: Unit>(before: &Held, start: u64, window: &Window<T>) -> Option<usize> {
    let differ = window.first_break(start - before.start, start + LANES as u64, start + before.len);
    if differ == start + before.len
        || !is_digit(window.at(differ))
        || !is_digit(window.at(differ - start + before.start))
    {
        return None;
    }
    let from = differ - (start..differ).rev().take_while(|&pos| is_digit(window.at(pos))).count() as u64;
    let from = (from - start) as usize;
    (!part_of_a_name(&|k| window.at(start + k as u64), from)).then_some(from)
}

/// Unit `i` of a line held in the window as one or two slices of its ring.
#[inline(always)]
fn read<'a, T: Unit>((older, newer): (&'a [T], &'a [T])) -> impl Fn(usize) -> u32 + 'a {
    move |i| if i < older.len() { older[i].into() } else { newer[i - older.len()].into() }
}

fn is_digit(unit: u32) -> bool {
    unit.wrapping_sub(u32::from(b'0')) < 10
}

/// The lines a counter streak of `line`'s template needs. The template is the line without its
/// indentation (layout: an indented line of code, `        base + 2 * step,` 61 times in torch's
/// vec512_int.h, needs as many lines as its content alone), each digit run one unit. A template
/// of words (no mark of code, at least 3 of 4 visible units letters, as a block of words:
/// `7. A first-date activity:`) or without a letter (whose numbers must all count, see
/// [`counts_on`]) needs `counter_min_lines`/`counter_span`; code and markup (`insert ( 2400 1255 0
/// 'I/O' )` 54 times in postgres.bki, `pd.Timestamp("2043-01-01"),`, `- 7. Cleaning:`) the
/// `code_counter_` values, as benign code counts on for longer than prose does.
pub(crate) fn required_lines(rules: &Rules, line: &[u32]) -> u64 {
    let (mut template_len, mut visible, mut letters, mut code) = (0, 0, 0, false);
    let mut after_digit = false;
    let indent = line.iter().take_while(|&&unit| is_whitespace(unit)).count();
    for &unit in &line[indent..] {
        let digit = is_digit(unit);
        if !(digit && after_digit) {
            template_len += 1;
            match classify(unit) {
                UnitClass::Whitespace => {}
                UnitClass::Letter => (visible, letters) = (visible + 1, letters + 1),
                UnitClass::Other => (visible, code) = (visible + 1, code || unit < 128 && is_code_mark(unit as u8)),
            }
        }
        after_digit = digit;
    }
    let words = letters == 0 || !code && 4 * letters >= 3 * visible;
    rules.required_counter_lines(template_len, words)
}

/// Whether `after` follows `before` in a counter streak: equal outside their digit runs, with as
/// many runs, each number unchanged or one up, at least one one up, none that goes up
/// [`part_of_a_name`], and in a template without a letter every number one up but the fraction
/// of a decimal.
pub(crate) fn counts_on<S: Unit>(before: &[S], after: &[S]) -> bool {
    counts_on_by(before.len(), |i| before[i].into(), after.len(), |i| after[i].into(), 0)
}

/// [`counts_on`] over lines read a unit at a time (from the window or a copy), from `from` (the
/// lines are equal before it, and it starts a digit run or holds no digit), up to the first
/// unit that tells them apart.
#[inline(always)]
fn counts_on_by(
    before_len: usize,
    before: impl Fn(usize) -> u32,
    after_len: usize,
    after: impl Fn(usize) -> u32,
    from: usize,
) -> bool {
    if !(before_len..=before_len + MAX_GAIN).contains(&after_len) {
        return false;
    }
    let (mut i, mut j) = (from, from);
    let mut advanced = false;
    // Whether every number from `from` on went one up (a decimal's fraction aside).
    let mut every_number_up = true;
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
                if part_of_a_name(&before, i) {
                    return false;
                }
                advanced = true;
            } else if !x.equals(&y) {
                return false;
            } else {
                every_number_up &= is_fraction(&before, i);
            }
            (i, j) = (x.end, y.end);
        } else if a == b {
            (i, j) = (i + 1, j + 1);
        } else {
            return false;
        }
    }
    if !(advanced && i == before_len && j == after_len) {
        return false;
    }
    // Rare (the lines count on): a template without a letter counts only if every number does,
    // including those before `from`, which the lines share.
    every_number_up && (0..from).all(|k| !starts_a_number(&before, k) || is_fraction(&before, k))
        || (0..before_len).any(|k| !is_digit(before(k)) && classify(before(k)) == UnitClass::Letter)
}

/// Whether a digit run starts at `k`.
fn starts_a_number(unit: &impl Fn(usize) -> u32, k: usize) -> bool {
    is_digit(unit(k)) && (k == 0 || !is_digit(unit(k - 1)))
}

/// Whether the digit run at `k` is the fraction of a decimal (right after a digit and `.`): the
/// `5` of `$1.5`, which stays as the number counts.
fn is_fraction(unit: &impl Fn(usize) -> u32, k: usize) -> bool {
    k >= 2 && unit(k - 1) == u32::from(b'.') && is_digit(unit(k - 2))
}

/// Whether the digit run at `k` is the tail of a name or an index: right after `_` or `[`, or
/// after letters that are no word: fewer than three (`x1`, `v2`, the `x` of `0x1f`), glued to a
/// digit or `_` before them (`0xff1`, `var_ab2`), or with a capital after the first
/// (`shHereDoc01`, `krlError0`: camel-case names in vim's syntax files). After a word
/// (`backup7`, `assistant57`, `Item7`) a number counts: a model numbering files or turns.
fn part_of_a_name(unit: &impl Fn(usize) -> u32, k: usize) -> bool {
    let letter = |at: usize| classify(unit(at)) == UnitClass::Letter;
    if k == 0 {
        return false;
    }
    let (underscore, bracket) = (u32::from(b'_'), u32::from(b'['));
    let before = unit(k - 1);
    if before == underscore || before == bracket {
        return true;
    }
    let letters = (0..k).rev().take_while(|&at| letter(at)).count();
    if letters == 0 {
        return false;
    }
    let word = k - letters;
    let glued = word > 0 && (is_digit(unit(word - 1)) || unit(word - 1) == underscore);
    let camel = (word + 1..k).any(|at| char::from_u32(unit(at)).is_some_and(char::is_uppercase));
    letters < 3 || glued || camel
}

/// A maximal run of digits `from..end`, read through `unit`.
struct Digits<'a, F: Fn(usize) -> u32> {
    unit: &'a F,
    from: usize,
    end: usize,
}

impl<'a, F: Fn(usize) -> u32> Digits<'a, F> {
    /// The run that starts at `from` (a digit) in a line of `len` units.
    fn at(unit: &'a F, from: usize, len: usize) -> Self {
        let end = (from..len).find(|&k| !is_digit(unit(k))).unwrap_or(len);
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

    /// Whether `other` is these digits plus one: the last digit below 9 goes one up and the nines
    /// after it become zeros (all nines: a 1 and as many zeros), so the width is kept.
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
    fn numbers_step_by_one_keeping_their_width() {
        assert!(follows("1. test.py", "2. test.py"));
        assert!(follows("9. a", "10. a"));
        assert!(follows("099 a", "100 a"));
        assert!(follows("0 a", "1 a"));
        assert!(follows("a 007", "a 008"));
        assert!(follows("a 009", "a 010"));
        // Leading zeros are part of the number's form: dropped or added, it is another number.
        assert!(!follows("a 007", "a 8"));
        assert!(!follows("7 a", "07 a"));
        assert!(!follows("07 a", "8 a"));
        assert!(follows("x 199 y", "x 200 y"));
        let long = "1".repeat(40);
        assert!(follows(&format!("n {long}9"), &format!("n {}20", &long[1..])));
        assert!(!follows(&format!("n {long}9"), &format!("n {long}0")));
        assert!(follows(&format!("n {}", "9".repeat(40)), &format!("n 1{}", "0".repeat(40))));
        // Several numbers: each unchanged or one up, at least one up.
        assert!(follows("Server 1: port 80", "Server 2: port 80"));
        assert!(follows("(12, 12)", "(13, 13)"));
        // Two numbers that carry at once; three make the line too much longer.
        assert!(follows("(9, 9) a", "(10, 10) a"));
        assert!(!follows("(9, 9, 9) a", "(10, 10, 10) a"));
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
    fn numbers_after_words_count_names_and_indexes_do_not() {
        assert!(follows("file_size(/var/log/backup7)", "file_size(/var/log/backup8)"));
        assert!(follows("<|im_start|>assistant57", "<|im_start|>assistant58"));
        assert!(follows("key9 is set", "key10 is set"));
        // Fewer than three letters, or letters glued to a digit or `_` before them: a name.
        assert!(!follows("ab1 is set", "ab2 is set"));
        assert!(!follows("0xff1, a", "0xff2, a"));
        assert!(!follows("var_abc1 = a", "var_abc2 = a"));
        assert!(!follows("hi def link shHereDoc01 shRedir", "hi def link shHereDoc02 shRedir"));
        assert!(follows("Item7 is ready", "Item8 is ready"));
    }

    #[test]
    fn without_a_letter_every_number_counts() {
        assert!(follows("(7)", "(8)"));
        assert!(follows("7", "8"));
        assert!(follows("7. 8. 9.", "8. 9. 10."));
        // The fraction of a decimal stays as its number counts.
        assert!(follows("$1.5", "$2.5"));
        assert!(follows("1.0.0", "2.0.0"));
        // A column that stays: a CSV row with a counter column.
        assert!(!follows("7,0,0", "8,0,0"));
        assert!(!follows("7 7", "8 7"));
        // A decimal counting by a tenth does not count by one.
        assert!(!follows("1.5", "1.6"));
    }

    #[test]
    fn templates_of_words_need_fewer_lines_than_code() {
        let r = DEFAULT_RULES;
        // Words: `N. A first-date activity:` is 25 units (a digit run counts as one): 640 / 26.
        assert_eq!(required_lines(&r, &units("12. A first-date activity:")), 25);
        assert_eq!(required_lines(&r, &units(&format!("1. {}", "word ".repeat(20)))), 16);
        // No letter: as words (every number must count). `N,` is 2 units.
        assert_eq!(required_lines(&r, &units("17,")), 214);
        // Code and markup: `base + N * step,` is 16 units (indentation does not count), 1600 / 17;
        // `- N. Cleaning:` has too few letters for words (8 of 12), 1600 / 15.
        assert_eq!(required_lines(&r, &units("- 155. Cleaning:")), 107);
        assert_eq!(required_lines(&r, &units("        base + 2 * step,")), 95);
        assert_eq!(required_lines(&r, &units("<b>12.</b> <b>word</b>")), 73);
        assert_eq!(required_lines(&r, &units("insert ( 2400 1255 0 'I/O' )")), 70);
    }
}
