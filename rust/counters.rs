//! The counter-template rule, one line end at a time: a model stuck on a template where only a
//! number advances (`1. test.py`, `2. test.py`, ...), or on a cycle of two or three lines where a
//! number advances (`<|im_start|>assistant57` and a prompt line, then `assistant58` and the same
//! line; `1. Apple`, `2. Banana`, `3. Apple`, ...; three cat-care items numbered on and on).
//!
//! A line steps on from the line `p` lines before it (its cycle: 1 to 3 non-blank lines) when
//! the two are equal once every maximal run of ASCII digits is masked, and from the first to the
//! second every number is unchanged, one up or `p` up, at least one of them up (in a cycle, `p`
//! 2 or 3, exactly one: several at once are a table of values), and no number that goes up is the
//! tail of an identifier or an index (see [`part_of_a_name`]: `value_7`, `x1`, `0x1f`, `out[7]`
//! are generated code and data; `backup7` and `assistant57`, a number after a word, count). In a
//! template without a letter every number must go up (the fraction of a decimal aside: `$1.5`,
//! `$2.5`): `(7)`, bare numbers and `7. 8. 9.` count, a CSV row whose counter column is followed
//! by other values (`7,0,0`) does not.
//!
//! A streak of cycles of `p` lines starts at a line that steps on from the line `p` before it (the
//! smallest such `p`) and does not repeat the line before it (that is `identical_lines`), its
//! first line that one; each later line continues it if it steps on from the line `p` before it
//! or equals it, as long as no `p` lines in a row are equal to the line a cycle before (a cycle
//! where no number changes is a repeated block, not a counter; so a streak of cycles of one line is lines
//! that each count on). Any other non-blank line breaks the streak, and starts none (the next
//! line may). Blank lines do not break a streak; trailing whitespace is ignored. A streak is
//! reported by its first cycle: its first `p` lines, joined by newlines.
//!
//! How many lines a streak needs depends on what its cycle is made of ([`TemplateClass`], see
//! [`required_lines`]): words `counter_min_lines`, code and markup `code_counter_min_lines`, data
//! `data_counter_min_lines` (with the spans of a preset that sets them); and always a line more
//! than its cycle.
//!
//! Numbers are compared on their digit strings, so no number is too long to compare: a number is
//! unchanged if its digits are, and one (or `p`) up if they are its digits plus one (or `p`),
//! worked out with the carry and keeping its width (`099` to `100`, `9` to `10`; `7` to `07` is
//! neither: a model counting keeps the form of its numbers).
//!
//! Only lines that fit `max_long_period` units (newline excluded, trailing whitespace included)
//! can be counter lines: such a line is always whole in the window at its newline, whatever the
//! chunking. The three latest non-blank lines are read back from the window, and copied out of it
//! only if they would leave it (blank lines between, long lines); the streak's first cycle is
//! copied when it starts. So a stream keeps at most six lines of `max_long_period` units. A
//! line more than two units longer than the one a cycle before (more than two numbers that
//! carry at once: `(9, 9, 9)` to `(10, 10, 10)`) breaks the streak.
//!
//! What a line costs: a line that steps on from another is no shorter (a number keeps its width
//! or gains a digit; in a cycle only one number steps, so it gains at most one unit), the two
//! end alike (or both in a digit), and they first differ at a digit in both (the last digit that
//! goes up, or the first of a number of nines). So a line shorter or much longer than each of
//! the three before it, that ends apart from those as long, or that first differs from them at a
//! unit no digit in either (found 16 units at a time), most lines of any text, is told apart
//! without a digit being read (docs/benchmarks.md).

use crate::classes::{classify, is_ascii_digit, is_whitespace, UnitClass};
use crate::lanes::{Unit, LANES};
use crate::rules::Rules;
use crate::window::Window;

/// What the end of a non-blank line did to the streak of counter lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CounterEvent {
    /// The line continues the streak, or starts one (before it reached its rule, or after).
    Continued,
    /// The line does not continue the streak that was running.
    Broken,
    /// The streak just reached the lines its rule needs (where it starts, its first cycle and
    /// its lines: [`Counters::first_cycle`], [`Counters::lines`]).
    Reached,
}

/// The longest cycle of lines a streak may repeat.
pub(crate) const MAX_CYCLE_LINES: usize = 3;

/// What a counter template is made of, which sets the lines its streak needs (see
/// [`required_lines`]). Benign text counts on longest in data, then in code; a model stuck on a
/// template writes words as often as anything.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateClass {
    /// Words, whatever punctuation sits among them (`N. Check the server's response ...`,
    /// ``N. `test.py` ``, `**Step N:**`, `2023-01-N,Phoenix,29.5,51,14`).
    Words,
    /// Code and markup: a line holding a bracket, `<` `>`, `=`, `;` or `+` (`server(N);`,
    /// `<b>N.</b>`).
    Code,
    /// Data: mostly numbers and punctuation (`(N)`, bare numbers, `$N.5`, an ASCII-art rule
    /// `+---- N ----`), a table row of cells (`| N | pending |`), one name per line (a list of
    /// keywords, `pycallN`), or a counter of four digits or more (a year, an id, a row number:
    /// data counts on from large values, a model from 1).
    Data,
}

/// The run of counter lines the latest lines belong to.
#[derive(Clone, Copy, Debug)]
struct Streak {
    count: u64,
    /// Non-blank lines in a cycle.
    cycle_lines: usize,
    /// Lines in a row equal to the line a cycle before (fewer than `cycle_lines`).
    flat: usize,
    /// The lines its cycle needs, once worked out ([`Counters::event`]).
    required: Option<u64>,
}

/// A line: where it starts, its content's length (trailing whitespace dropped) and where it
/// ends (its newline), read from the window while it holds the line, from `copy` once it had
/// to leave. Setting one costs four stores, as every non-blank line of a text is set.
#[derive(Clone, Debug)]
struct Held {
    start: u64,
    len: u64,
    end: u64,
    /// Its last unit (trailing whitespace dropped).
    last: u32,
    /// The start of the line `copy` holds (`u64::MAX`: none).
    copy_of: u64,
    copy: Vec<u32>,
}

impl Held {
    /// No line yet: no line is short enough to count on from it.
    fn none() -> Held {
        Held { start: 0, len: NO_LINE, end: 0, last: 0, copy_of: u64::MAX, copy: Vec::new() }
    }

    fn set(&mut self, start: u64, len: u64, end: u64, last: u32) {
        (self.start, self.len, self.end, self.last) = (start, len, end, last);
    }

    fn copied(&self) -> bool {
        self.copy_of == self.start
    }

    /// Whether the line fits `max_long_period` units (newline excluded, trailing whitespace
    /// included): a counter line.
    fn fits(&self, rules: &Rules) -> bool {
        self.len != NO_LINE && self.end - self.start <= u64::from(rules.max_long_period)
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
    /// The streak, once a line steps on.
    streak: Option<Streak>,
    /// Where the streak's first line starts.
    first_start: u64,
    /// The streak's first cycle: its first `cycle_lines` lines (trailing whitespace dropped) joined
    /// by newlines.
    cycle: Vec<u32>,
    /// The line that stepped on from the first cycle, kept until what the streak needs is worked
    /// out.
    stepped: Vec<u32>,
    /// The latest non-blank lines, a ring: `recent[latest]` the newest.
    recent: [Held; MAX_CYCLE_LINES],
    latest: usize,
}

/// The length of no line: no line is as long or a few units longer.
const NO_LINE: u64 = u64::MAX / 2;

impl Counters {
    pub fn new(rules: &Rules) -> Counters {
        Counters {
            rules: *rules,
            streak: None,
            first_start: 0,
            cycle: Vec::new(),
            stepped: Vec::new(),
            recent: [Held::none(), Held::none(), Held::none()],
            latest: 0,
        }
    }

    pub fn heap_bytes(&self) -> usize {
        let copies: usize = self.recent.iter().map(|line| line.copy.capacity()).sum();
        (copies + self.cycle.capacity() + self.stepped.capacity()) * std::mem::size_of::<u32>()
    }

    /// Before units are appended to `window`: copies the lines a streak may still compare that
    /// would leave it (`leaving` is the first position still held after the append).
    /// Inlined: a stream fed in small deltas comes here for every delta, and nearly always
    /// no line is leaving (one compare each).
    #[inline(always)]
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        for line in &mut self.recent {
            if line.start < leaving && line.fits(&self.rules) {
                line.keep(window, leaving);
            }
        }
    }

    /// The lines of the streak so far.
    pub fn lines(&self) -> u64 {
        self.streak.map_or(0, |streak| streak.count)
    }

    /// Where the streak's first line starts, and its first cycle (its first lines, trailing
    /// whitespace dropped, joined by newlines).
    pub fn first_cycle(&self) -> (u64, Vec<u32>) {
        (self.first_start, self.cycle.clone())
    }

    /// The slot in `recent` of the non-blank line `p` lines before the one being read (`p` in
    /// `1..=MAX_CYCLE_LINES`), from a table: a remainder cost more than the rest of a line's check.
    fn slot_back(&self, p: usize) -> usize {
        const SLOTS: [[usize; MAX_CYCLE_LINES]; MAX_CYCLE_LINES] = [[0, 2, 1], [1, 0, 2], [2, 1, 0]];
        SLOTS[self.latest][p - 1]
    }

    fn back(&self, p: usize) -> &Held {
        &self.recent[self.slot_back(p)]
    }

    /// The non-blank line from `start`, whose content (trailing whitespace dropped) is
    /// `content_len` units and ends in `last`, ended at the newline `x` (`repeats_previous`: it equals
    /// the non-blank line before it): what it did to the streak, if one was running or it
    /// started one.
    #[inline(always)]
    pub fn on_line<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        last: u32,
        x: u64,
        repeats_previous: bool,
        window: &Window<T>,
    ) -> Option<CounterEvent> {
        // Lengths and last units first: most lines are told apart by them (a line that steps
        // on is no shorter than the line it steps on from, at most `MAX_GAIN` units longer, and
        // ends alike), whichever of the three lines before it that is: a bit for each slot of
        // `recent` that may be.
        let near = |slot: usize| {
            let line = &self.recent[slot];
            u8::from(content_len.wrapping_sub(line.len) <= MAX_GAIN as u64 && ends_alike(last, line.last)) << slot
        };
        let event = match self.streak {
            Some(streak) => Some(self.go_on(streak, start, content_len, x, window)),
            // A line that repeats the one before is the identical-lines rule's: it starts none.
            None if !repeats_previous => match near(0) | near(1) | near(2) {
                0 => None,
                slots => self.start_streak(slots, start, content_len, x, window),
            },
            None => None,
        };
        self.latest = if self.latest + 1 == MAX_CYCLE_LINES { 0 } else { self.latest + 1 };
        self.recent[self.latest].set(start, content_len, x, last);
        event
    }

    /// No streak is running: starts one if the line steps on from the line one or two before it
    /// (the first that it does), of those in the `near` slots of `recent`.
    #[inline(never)]
    fn start_streak<T: Unit>(
        &mut self,
        near: u8,
        start: u64,
        content_len: u64,
        x: u64,
        window: &Window<T>,
    ) -> Option<CounterEvent> {
        if x - start > u64::from(self.rules.max_long_period) {
            return None;
        }
        for p in 1..=MAX_CYCLE_LINES {
            let slot = self.slot_back(p);
            let before = &self.recent[slot];
            // In a cycle one number steps, by at most 3: it gains at most a digit.
            if near & (1 << slot) != 0
                && (p == 1 || content_len - before.len <= 1)
                && before.fits(&self.rules)
                && self.steps_on(before, start, content_len, p, window)
                && (1..p).all(|q| self.back(q).fits(&self.rules))
            {
                return Some(self.started(p, start, content_len, window));
            }
        }
        None
    }

    /// Whether the line from `start` steps on from `before` (which fits, no longer, and at most
    /// `MAX_GAIN` units shorter) in a cycle of `cycle_lines` lines.
    #[inline(always)]
    fn steps_on<T: Unit>(
        &self,
        before: &Held,
        start: u64,
        content_len: u64,
        cycle_lines: usize,
        window: &Window<T>,
    ) -> bool {
        let from = if before.copied() { Some(0) } else { first_difference_at_digits(before, start, window) };
        from.is_some_and(|from| counts_from(before, start, content_len, from, cycle_lines, window))
    }

    /// A streak of cycles of `cycle_lines` lines starts at the line from `start` (`content_len` units): its
    /// first cycle, the lines before it, is copied, and what it needs worked out.
    #[inline(never)]
    fn started<T: Unit>(
        &mut self,
        cycle_lines: usize,
        start: u64,
        content_len: u64,
        window: &Window<T>,
    ) -> CounterEvent {
        let lines: Vec<Vec<u32>> = (1..=cycle_lines).rev().map(|p| self.back(p).units(window)).collect();
        self.stepped = window.units(start, start + content_len);
        self.first_start = self.back(cycle_lines).start;
        self.cycle.clear();
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                self.cycle.push(u32::from(b'\n'));
            }
            self.cycle.extend_from_slice(line);
        }
        self.streak = Some(Streak { count: cycle_lines as u64 + 1, cycle_lines, flat: 0, required: None });
        self.event()
    }

    /// What the streak's latest line did: reached what the streak needs, or continued it. What it
    /// needs (by its lines' class: [`required_lines`]) is worked out once it has the fewest lines
    /// any class needs, which most streaks of clean text never reach.
    fn event(&mut self) -> CounterEvent {
        let rules = &self.rules;
        let streak = self.streak.as_mut().expect("a streak runs");
        let least = rules.counter_min_lines.min(rules.code_counter_min_lines).min(rules.data_counter_min_lines);
        if streak.required.is_none() && streak.count >= u64::from(least).max(streak.cycle_lines as u64 + 1) {
            let lines: Vec<Vec<u32>> =
                self.cycle.split(|&unit| unit == u32::from(b'\n')).map(<[u32]>::to_vec).collect();
            streak.required = Some(required_lines(rules, &lines, &self.stepped));
        }
        if streak.required == Some(streak.count) {
            CounterEvent::Reached
        } else {
            CounterEvent::Continued
        }
    }

    /// A streak is running: whether the line continues it (stepping on from the line a cycle
    /// before, or equal to it), and whether it reached its rule with it.
    #[inline(never)]
    fn go_on<T: Unit>(
        &mut self,
        streak: Streak,
        start: u64,
        content_len: u64,
        x: u64,
        window: &Window<T>,
    ) -> CounterEvent {
        let fits = x - start <= u64::from(self.rules.max_long_period);
        let before = self.back(streak.cycle_lines);
        let continues = if !fits || !before.fits(&self.rules) {
            None
        } else if streak.cycle_lines > 1 && content_len == before.len && self.equal(before, start, window) {
            Some(streak.flat + 1)
        } else if content_len.wrapping_sub(before.len) <= MAX_GAIN as u64
            && self.steps_on(before, start, content_len, streak.cycle_lines, window)
        {
            Some(0)
        } else {
            None
        };
        let Some(flat) = continues.filter(|&flat| flat < streak.cycle_lines) else {
            self.streak = None;
            return CounterEvent::Broken;
        };
        self.streak = Some(Streak { count: streak.count + 1, flat, ..streak });
        self.event()
    }

    /// Whether the line from `start` (as long as `before`) equals it.
    fn equal<T: Unit>(&self, before: &Held, start: u64, window: &Window<T>) -> bool {
        let line = read(window.slices(start, start + before.len));
        if before.copied() {
            (0..before.copy.len()).all(|i| before.copy[i] == line(i))
        } else {
            window.first_break(start - before.start, start, start + before.len) == start + before.len
        }
    }
}

/// Whether two lines that end in `a` and `b` may step on one from the other: their templates
/// are equal, so they end alike or both in a number. Most lines of the same length end apart.
#[inline(always)]
fn ends_alike(a: u32, b: u32) -> bool {
    a == b || is_ascii_digit(a) && is_ascii_digit(b)
}

/// Whether the line from `start` (`content_len` units) steps on from `before` in a cycle of
/// `cycle_lines` lines, the two equal before `from`: compares them digit by digit from there.
#[inline(never)]
fn counts_from<T: Unit>(
    before: &Held,
    start: u64,
    content_len: u64,
    from: usize,
    cycle_lines: usize,
    window: &Window<T>,
) -> bool {
    let line = read(window.slices(start, start + content_len));
    let (len, before_len) = (content_len as usize, before.len as usize);
    if before.copied() {
        counts_on_by(before_len, |i| before.copy[i], len, line, from, cycle_lines)
    } else {
        counts_on_by(
            before_len,
            read(window.slices(before.start, before.start + before.len)),
            len,
            line,
            from,
            cycle_lines,
        )
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
    if !is_ascii_digit(line[at].into()) || !is_ascii_digit(prior[at].into()) {
        return None;
    }
    let from = at - line[..at].iter().rev().take_while(|&&unit| is_ascii_digit(unit.into())).count();
    (!part_of_a_name(&|k| line[k].into(), from)).then_some(from)
}

/// [`first_difference_at_digits`] for lines whose first 16 units are equal (indentation).
#[inline(never)]
fn first_difference_after_lanes<T: Unit>(before: &Held, start: u64, window: &Window<T>) -> Option<usize> {
    let differ = window.first_break(start - before.start, start + LANES as u64, start + before.len);
    if differ == start + before.len
        || !is_ascii_digit(window.at(differ))
        || !is_ascii_digit(window.at(differ - start + before.start))
    {
        return None;
    }
    let from = differ - (start..differ).rev().take_while(|&pos| is_ascii_digit(window.at(pos))).count() as u64;
    let from = (from - start) as usize;
    (!part_of_a_name(&|k| window.at(start + k as u64), from)).then_some(from)
}

/// Unit `i` of a line held in the window as one or two slices of its ring.
#[inline(always)]
fn read<'a, T: Unit>((older, newer): (&'a [T], &'a [T])) -> impl Fn(usize) -> u32 + 'a {
    move |i| if i < older.len() { older[i].into() } else { newer[i - older.len()].into() }
}

/// The lines a counter streak needs whose first cycle is `lines` and whose next line,
/// stepping on from the first, is `stepped` (see [`Rules::required_counter_lines`]). A line's
/// template is the line without its indentation, each digit run one unit; a cycle's is its
/// lines' together. What the cycle is made of ([`TemplateClass`]): data if a line is data
/// (fewer than one visible unit in four a letter: numbers and punctuation, an ASCII-art rule;
/// a table row, its first visible unit `|`; one name of ASCII letters and digits alone, as in a
/// list of keywords, `pycall1i`), or if its counter (the widest number that steps from its first
/// line to `stepped`) has four digits or more: years, ids and row numbers are data columns,
/// which count on for long (copyright years, decimal's test cases `dqadd371427`), where a model
/// numbers from 1; else code if a line holds a mark of code (a bracket, `<` `>`, `=`, `;`, `+`:
/// `server(N);`, `<b>N.</b>`); else words, whatever punctuation sits among them (an
/// apostrophe, quotes, backticks, a colon, emphasis). A chat-template marker (`<|im_start|>`,
/// `<|eot_id|>`: `<|`, ASCII letters, digits or `_`, `|>`) is text a model writes between
/// turns: its units count in the template's length and as nothing else, and a line of markers
/// alone is of no class. A model that runs past its turn writes its chat template's special
/// tokens as text, a turn after each; read as code (`<`, `>`), such a cycle would need 25 lines,
/// not the 16 of words. One loop of the corpora does this: llama.cpp#19585
/// (tests/data/llama_cpp_19585_loop.txt), found so at its 17th line.
pub(crate) fn required_lines(rules: &Rules, lines: &[Vec<u32>], stepped: &[u32]) -> u64 {
    let mut template_len = 0;
    let (mut code, mut data) = (false, counter_width(&lines[0], stepped) >= 4);
    for line in lines {
        let template = template(line);
        template_len += template.len;
        code |= template.class == LineClass::Code;
        data |= template.class == LineClass::Data;
    }
    let class = if data {
        TemplateClass::Data
    } else if code {
        TemplateClass::Code
    } else {
        TemplateClass::Words
    };
    rules.required_counter_lines(template_len, lines.len() as u64, class)
}

/// The digits of the widest number of `before` that differs in `after` (a line that steps on
/// from it: the same template).
fn counter_width(before: &[u32], after: &[u32]) -> usize {
    let (mut i, mut j, mut width) = (0, 0, 0);
    while i < before.len() && j < after.len() {
        if is_ascii_digit(before[i]) && is_ascii_digit(after[j]) {
            let (read_before, read_after) = (|k: usize| before[k], |k: usize| after[k]);
            let x = Digits::at(&read_before, i, before.len());
            let y = Digits::at(&read_after, j, after.len());
            if !x.equals(&y) {
                width = width.max(x.len());
            }
            (i, j) = (x.end, y.end);
        } else {
            (i, j) = (i + 1, j + 1);
        }
    }
    width
}

/// What a line of a counter template is made of (see [`required_lines`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum LineClass {
    /// Nothing visible but chat-template markers (`<|im_end|>`).
    Marker,
    Words,
    Code,
    /// Fewer than one visible unit in four a letter (a digit run counting as one), a table row
    /// (its first visible unit `|`) or one name (ASCII letters and digits alone: `pycall1i`).
    Data,
}

/// A line's template: its length (indentation left out, each digit run one unit) and class.
struct Template {
    len: u64,
    class: LineClass,
}

fn template(line: &[u32]) -> Template {
    let (mut len, mut visible, mut letters, mut code, mut name) = (0, 0, 0, false, true);
    let indent = line.iter().take_while(|&&unit| is_whitespace(unit)).count();
    let table_row = line.get(indent) == Some(&u32::from(b'|'));
    let mut i = indent;
    while i < line.len() {
        let unit = line[i];
        let marker = chat_marker_len(&line[i..]);
        if marker > 0 {
            (len, i, name) = (len + marker as u64, i + marker, false);
            continue;
        }
        name &= unit < 128 && (unit as u8).is_ascii_alphanumeric();
        let continues_a_number = is_ascii_digit(unit) && i > indent && is_ascii_digit(line[i - 1]);
        if !continues_a_number {
            len += 1;
            match classify(unit) {
                UnitClass::Whitespace => {}
                UnitClass::Letter => (visible, letters) = (visible + 1, letters + 1),
                UnitClass::Other => {
                    visible += 1;
                    code |= unit < 128 && is_template_code_mark(unit as u8);
                }
            }
        }
        i += 1;
    }
    let class = if visible == 0 {
        LineClass::Marker
    } else if table_row || name || 4 * letters < visible {
        LineClass::Data
    } else if code {
        LineClass::Code
    } else {
        LineClass::Words
    };
    Template { len, class }
}

/// Whether a line is data to the counter rule (see [`LineClass::Data`]): a table row, mostly
/// numbers and punctuation, or a name alone.
pub(crate) fn is_data_line(line: &[u32]) -> bool {
    template(line).class == LineClass::Data
}

/// A mark of code in a counter template: a bracket, `<` `>`, `=`, `;` or `+` (`base + N *
/// step,`). Quotes, apostrophes, backticks, `_` and `*` sit in prose and markdown as often as
/// in code.
fn is_template_code_mark(byte: u8) -> bool {
    matches!(byte, b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'<' | b'>' | b'=' | b';' | b'+')
}

/// The length of the chat-template marker `units` starts with (`<|im_end|>`), or 0: `<|`, a name
/// of ASCII letters, digits or `_`, `|>`, the shape of the special tokens of ChatML
/// (`<|im_start|>`, `<|im_end|>`) and Llama 3 (`<|eot_id|>`) templates.
fn chat_marker_len(units: &[u32]) -> usize {
    let ascii = |i: usize| units.get(i).map_or(0, |&unit| if unit < 128 { unit as u8 } else { 0 });
    if ascii(0) != b'<' || ascii(1) != b'|' {
        return 0;
    }
    let name = (2..).take_while(|&i| ascii(i).is_ascii_alphanumeric() || ascii(i) == b'_').count();
    if name > 0 && ascii(2 + name) == b'|' && ascii(3 + name) == b'>' {
        4 + name
    } else {
        0
    }
}

/// The lines of a cycle, by the block a streak is reported by (its first cycle's lines, joined
/// by newlines).
pub(crate) fn cycle_lines_of(block: &[u32]) -> usize {
    1 + block.iter().filter(|&&unit| unit == u32::from(b'\n')).count()
}

/// Whether `after` steps on from `before`, the line a cycle of `cycle_lines` lines before it, in
/// a counter streak: equal outside their digit runs, with as many runs, each number unchanged,
/// one up or `cycle_lines` up, at least one up (in a cycle of more than one line, exactly one), none
/// that goes up [`part_of_a_name`], and in a template without a letter every number up but the
/// fraction of a decimal.
pub(crate) fn counts_on<S: Unit>(before: &[S], after: &[S], cycle_lines: usize) -> bool {
    counts_on_by(before.len(), |i| before[i].into(), after.len(), |i| after[i].into(), 0, cycle_lines)
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
    cycle_lines: usize,
) -> bool {
    if !(before_len..=before_len + MAX_GAIN).contains(&after_len) {
        return false;
    }
    let (mut i, mut j) = (from, from);
    let mut advanced = false;
    // Whether every number from `from` on went up (a decimal's fraction aside).
    let mut every_number_up = true;
    while i < before_len && j < after_len {
        let (a, b) = (before(i), after(j));
        if is_ascii_digit(a) && is_ascii_digit(b) {
            let x = Digits::at(&before, i, before_len);
            let y = Digits::at(&after, j, after_len);
            if x.plus(&y, 1) || cycle_lines > 1 && x.plus(&y, cycle_lines as u32) {
                // A number that counts is no identifier's tail (`value_7`, `x1`, `0x1f`) nor an
                // index (`out[7]`): numbered names and subscripts are generated code and data
                // (CUDA's generated headers count `"=r"(__out_var[N]),` to 127), not a template
                // a model is stuck on.
                // In a cycle only one number steps: the item's (several at once are a table of
                // values, as in the test data of decimal arithmetic).
                if part_of_a_name(&before, i) || advanced && cycle_lines > 1 {
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
        || (0..before_len).any(|k| !is_ascii_digit(before(k)) && classify(before(k)) == UnitClass::Letter)
}

/// Whether a digit run starts at `k`.
fn starts_a_number(unit: &impl Fn(usize) -> u32, k: usize) -> bool {
    is_ascii_digit(unit(k)) && (k == 0 || !is_ascii_digit(unit(k - 1)))
}

/// Whether the digit run at `k` is the fraction of a decimal (right after a digit and `.`): the
/// `5` of `$1.5`, which stays as the number counts.
fn is_fraction(unit: &impl Fn(usize) -> u32, k: usize) -> bool {
    k >= 2 && unit(k - 1) == u32::from(b'.') && is_ascii_digit(unit(k - 2))
}

/// Whether the digit run at `k` is the tail of a name or an index: right after `_` or `[`, or
/// after letters that are no word: fewer than three (`x1`, `v2`, the `x` of `0x1f`), glued to a
/// digit or `_` before them (`0xff1`, `var_ab2`), or with a capital after the first
/// (`shHereDoc01`, `krlError0`: a camel-case identifier, which code numbers and a model
/// numbering items or turns does not write). After a word (`backup7`, `assistant57`, `Item7`) a
/// number counts: a model numbering files or turns.
///
/// The camel-case clause decides one file of the benign corpus (docs/tuning.md) at the
/// defaults: vim's syntax/sh.vim links `shHereDoc01` to `shHereDoc16`, 16 lines of a template
/// of words, as many as `counter_min_lines` asks (krl.vim's `krlError0` to `krlError10` stop at
/// 11). No loop of the corpora counts on after a camel-case name.
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
    let glued = word > 0 && (is_ascii_digit(unit(word - 1)) || unit(word - 1) == underscore);
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
        let end = (from..len).find(|&k| !is_ascii_digit(unit(k))).unwrap_or(len);
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

    /// Whether `other` is these digits plus `step` (below 10), worked out from the last digit
    /// with the carry: the width is kept but for a carry out of the first digit, which makes
    /// one more (`099` + 1 is `100`, `9` + 1 is `10`, `98` + 3 is `101`).
    fn plus<G: Fn(usize) -> u32>(&self, other: &Digits<'_, G>, step: u32) -> bool {
        let zero = u32::from(b'0');
        let n = self.len();
        let extra = match other.len().checked_sub(n) {
            Some(extra @ (0 | 1)) => extra,
            _ => return false,
        };
        let mut carry = step;
        for k in (0..n).rev() {
            let sum = self.digit(k) - zero + carry;
            if other.digit(k + extra) != zero + sum % 10 {
                return false;
            }
            carry = sum / 10;
        }
        if extra == 1 {
            carry > 0 && other.digit(0) == zero + carry
        } else {
            carry == 0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::{RuleValues, CONSERVATIVE_RULES, DEFAULT_RULES};

    fn units(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    fn follows(before: &str, after: &str) -> bool {
        counts_on(&units(before), &units(after), 1)
    }

    /// The lines a streak of the cycle `lines` needs, stepping on to `stepped`.
    fn needs(lines: &[&str], stepped: &str) -> u64 {
        required_lines(&DEFAULT_RULES, &lines.iter().map(|line| units(line)).collect::<Vec<_>>(), &units(stepped))
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
    fn words_need_16_lines_code_25_data_64_whatever_their_length() {
        // Words, whatever punctuation sits among them: an apostrophe, backticks, a colon,
        // emphasis, a list bullet, a CSV row of a word and numbers.
        let server = "1. Check the server's response to identify it.";
        assert_eq!(needs(&[server], &server.replace('1', "2")), 16);
        assert_eq!(needs(&["1. `test.py`"], "2. `test.py`"), 16);
        assert_eq!(needs(&["1. apple"], "2. apple"), 16);
        assert_eq!(needs(&["**Step 1:** wait"], "**Step 2:** wait"), 16);
        assert_eq!(needs(&["- 155. Cleaning:"], "- 156. Cleaning:"), 16);
        assert_eq!(needs(&["2023-01-01,Phoenix,29.5,51,14"], "2023-01-02,Phoenix,29.5,51,14"), 16);
        // Code and markup: a bracket, `<` `>`, `=`, `;` or `+`.
        assert_eq!(needs(&["        base + 2 * step,"], "        base + 3 * step,"), 25);
        assert_eq!(needs(&["server(1);"], "server(2);"), 25);
        assert_eq!(needs(&["<b>12.</b> <b>word</b>"], "<b>13.</b> <b>word</b>"), 25);
        assert_eq!(needs(&["1 = VIVA"], "2 = VIVA"), 25);
        // Data: fewer than a letter in four visible units, a table row, a name, a counter of
        // four digits or more.
        assert_eq!(needs(&["1: 0.5 0.5 0.5 0.5 ms"], "2: 0.5 0.5 0.5 0.5 ms"), 64);
        assert_eq!(needs(&["Item12"], "Item13"), 64);
        assert_eq!(needs(&["17,"], "18,"), 64);
        assert_eq!(needs(&["(7)"], "(8)"), 64);
        assert_eq!(needs(&["| 7 | pending | - |"], "| 8 | pending | - |"), 64);
        assert_eq!(needs(&["Copyright (C) 1995 the authors"], "Copyright (C) 1996 the authors"), 64);
        assert_eq!(needs(&["insert ( 2400 1255 0 'I/O' )"], "insert ( 2401 1255 0 'I/O' )"), 64);
        // A year that stays is no counter: the day counts.
        assert_eq!(needs(&["2023-01-09,Phoenix"], "2023-01-10,Phoenix"), 16);
    }

    #[test]
    fn a_cycle_is_code_if_a_line_is_else_words_if_a_line_is() {
        // llama.cpp#19585 (tests/data/llama_cpp_19585_loop.txt): a chat-template marker is no
        // code, so both lines are words.
        let cycle = ["<|im_start|>assistant57", "tell me something about you？<|im_end|>"];
        assert_eq!(needs(&cycle, "<|im_start|>assistant58"), 16);
        assert_eq!(needs(&["1. Apple", "x = f(1);"], "3. Apple"), 25);
        // A line of data makes the cycle data: a number alone, an ASCII-art rule, a name.
        assert_eq!(needs(&["1.", "Cat care"], "2."), 64);
        let traceback = ["'    | ValueError: 0\\n'", "'    +---------------- 2 ----------------\\n'"];
        assert_eq!(needs(&traceback, "'    | ValueError: 1\\n'"), 64);
        assert_eq!(needs(&["pycall1", "pycall1i", "pycall1t"], "pycall2"), 64);
        // A line of chat-template markers alone is of no class.
        assert_eq!(needs(&["Tell me a joke, number 1", "<|im_end|>"], "Tell me a joke, number 2"), 16);
        // Not a marker: `<|` without a name and `|>`.
        assert_eq!(needs(&["<| 1. Apple"], "<| 2. Apple"), 25);
        // With spans (the conservative preset), a short template needs more lines.
        let lines = |r: &Rules, line: &str, next: &str| required_lines(r, &[units(line)], &units(next));
        assert_eq!(lines(&CONSERVATIVE_RULES, "12. A first-date activity:", "13. A first-date activity:"), 25);
        assert_eq!(lines(&CONSERVATIVE_RULES, "- 155. Cleaning:", "- 156. Cleaning:"), 43);
        assert_eq!(lines(&CONSERVATIVE_RULES, "7", "8"), 320);
        // A line more than its cycle, whatever the thresholds.
        let r = Rules::new(RuleValues {
            counter_min_lines: 2,
            counter_span: 0,
            code_counter_min_lines: 2,
            code_counter_span: 0,
            data_counter_min_lines: 2,
            ..*DEFAULT_RULES
        })
        .unwrap();
        assert_eq!(required_lines(&r, &[units("1. a"), units("b"), units("c")], &units("4. a")), 4);
    }

    #[test]
    fn a_line_steps_on_by_one_or_by_its_cycle_lines() {
        let steps = |before: &str, after: &str, cycle_lines| counts_on(&units(before), &units(after), cycle_lines);
        assert!(steps("1. Apple", "3. Apple", 2));
        assert!(steps("1. Apple", "2. Apple", 2));
        assert!(steps("8. Apple", "11. Apple", 3));
        assert!(steps("98 a", "101 a", 3));
        assert!(!steps("1. Apple", "3. Apple", 1));
        assert!(!steps("1. Apple", "4. Apple", 2));
        assert!(steps("1. Apple", "4. Apple", 3));
        assert!(!steps("1. Apple", "5. Apple", 3));
        assert!(!steps("1. Apple", "1. Apple", 2));
        assert!(!steps("7 a", "09 a", 2));
    }
}
