//! The counter-run rule: numbers that count by one inside a line, one separator between each
//! (`54.55.56.57.` to the token limit, `1, 2, 3, 4, ...`). No line rule reads inside a line, and
//! a count never repeats itself exactly, so without this rule a model counting on one line runs
//! to its token limit unreported.
//!
//! A *number* is a maximal run of one to [`MAX_DIGITS`] ASCII digits that touches no ASCII letter
//! or underscore (`x1`, `uk_10`, `3rd` hold none: a number inside a name is part of the name) and
//! is followed by a unit (a number the text ends in may still gain a digit). A *count* is a run of
//! numbers, each one more than the number before it, with the same text between each pair: the
//! *separator*, of at most [`MAX_SEPARATOR`] units, holding no newline (a count is inside one
//! line) and no digit. A digit run that is no number (a name's, or four digits or more) ends the
//! count it follows. Counts are maximal and may share a number: in `1,2,3 4 5` the count `3 4 5`
//! starts at `3`.
//!
//! The rule holds at the unit after the count's `data_counter_min_lines`-th number (a count of
//! numbers alone needs as many numbers on one line as lines of them), that unit included. The
//! finding's `start` is the count's first number, its `block` that number and the separator,
//! `repeats` the numbers counted; a count reaching further extends the claim number by number,
//! as a streak of lines does line by line. The rule is off when twice its numbers would not fit
//! `max_long_period` (the token preset's, where it needs more than any stream holds).
//!
//! What it costs. A count of `n` numbers spans at least `2n` units (a digit and a separator unit
//! each, the unit after the last included), all in one line; so a line is read only once it is
//! that long (the *gate*), from its start (held in the window: the gate fits `max_long_period`),
//! then as it grows: a number at a time, the text between numbers a vector of units at a time.
//! The detector queues a piece's lines that reach the gate ahead of its other work, which a look
//! at the piece's newlines tells most pieces hold none of (`Core::counts_ahead`); reads stop at
//! each event (a count reaching its numbers, or one that did gaining a number), which the
//! detector reaches in order with the other rules' before reading on.

use crate::classes::is_ascii_digit;
use crate::lanes::{Unit, LANES};
use crate::rules::Rules;
use crate::template_lines::MAX_DIGITS;
use crate::window::Window;

/// The most units between two numbers of a count: numbers in a row, where items with more text
/// between their numbers are lines (the counter rule's).
pub const MAX_SEPARATOR: usize = 16;

/// Whether a number touching `unit` is part of a name: an ASCII letter or an underscore.
fn is_name(unit: u32) -> bool {
    unit == u32::from(b'_') || (unit | 0x20).wrapping_sub(u32::from(b'a')) < 26
}

/// Where the first ASCII digit of `units` is, a vector of lanes at a time.
fn first_digit<T: Unit>(units: &[T]) -> Option<usize> {
    let mut lanes = units.chunks_exact(LANES);
    for (k, lane) in lanes.by_ref().enumerate() {
        let digits = T::digits(lane.try_into().expect("LANES units"));
        if digits != 0 {
            return Some(k * LANES + digits.trailing_zeros() as usize);
        }
    }
    let rest = lanes.remainder();
    rest.iter().position(|&unit| is_ascii_digit(unit.into())).map(|i| units.len() - rest.len() + i)
}

/// The numbers a count needs, or `None` when the rule is off.
pub fn required_numbers(rules: &Rules) -> Option<u64> {
    let need = u64::from(rules.data_counter_min_lines);
    (2 * need <= u64::from(rules.max_long_period)).then_some(need)
}

/// A number read: where it starts, its value (of its first [`MAX_DIGITS`] digits) and its
/// digits.
#[derive(Clone, Copy, Debug, Default)]
struct Number {
    start: u64,
    value: u32,
    len: usize,
}

impl Number {
    /// Its digits, leading zeros included (`007`): a number has at most [`MAX_DIGITS`].
    fn digits(&self) -> impl Iterator<Item = u32> + '_ {
        (0..self.len as u32).rev().map(|k| u32::from(b'0') + self.value / 10u32.pow(k) % 10)
    }
}

/// Text between numbers, as far as a separator can be: `len` past [`MAX_SEPARATOR`] once it
/// cannot be one (too long, a newline, a digit run that is no number).
#[derive(Clone, Copy, Debug, Default)]
struct Gap {
    units: [u32; MAX_SEPARATOR],
    len: usize,
}

impl Gap {
    const BROKEN: usize = MAX_SEPARATOR + 1;

    fn extend<T: Unit>(&mut self, units: &[T]) {
        if self.len > MAX_SEPARATOR {
            return;
        }
        let newline = T::store(u32::from(b'\n'));
        if self.len + units.len() <= MAX_SEPARATOR && !units.contains(&newline) {
            for (to, &unit) in self.units[self.len..].iter_mut().zip(units) {
                *to = unit.into();
            }
            self.len += units.len();
        } else {
            self.len = Gap::BROKEN;
        }
    }

    fn separator(&self) -> Option<&[u32]> {
        (self.len <= MAX_SEPARATOR).then(|| &self.units[..self.len])
    }
}

/// Reads units a number at a time (the text between numbers a vector at a time) and tells, at
/// the unit after each number, how long the count it ends is. The one reading of counts, for the
/// detector and for a finding's whole extent.
#[derive(Clone, Debug)]
pub(crate) struct Counting {
    /// The unit before the next one.
    before: u32,
    /// The digit run being read (`len` 0: none), its length past [`MAX_DIGITS`] once it is too
    /// long to be a number.
    number: Number,
    after_name: bool,
    gap: Gap,
    /// The number before the gap (`has_last`: one that a number after the gap may step from).
    last: Number,
    has_last: bool,
    /// Numbers in the count `last` ends (0 without one).
    run: u64,
    separator: Gap,
    /// The count's first number.
    first: Number,
}

impl Counting {
    /// A reading that starts after `before` (a newline at the start of a line).
    pub fn after(before: u32) -> Counting {
        Counting {
            before,
            number: Number::default(),
            after_name: false,
            gap: Gap::default(),
            last: Number::default(),
            has_last: false,
            run: 0,
            separator: Gap::default(),
            first: Number::default(),
        }
    }

    /// Reads `units`, from position `pos` on, up to the end of the next digit run that matters
    /// to a count (one that continues or starts a count of two or more, or ends one): how many
    /// units it read, and if such a run ended, the position of the unit after it (which is read
    /// next, as the first of the text after it) and the numbers of the count it ends (`None`: a
    /// digit run that is no number).
    pub fn read<T: Unit>(&mut self, units: &[T], pos: u64) -> (usize, Option<(u64, Option<u64>)>) {
        let mut i = 0;
        loop {
            if self.number.len == 0 {
                // The text up to the next digit (a read starts with it, or after a number).
                let gap = first_digit(&units[i..]).unwrap_or(units.len() - i);
                if gap > 0 {
                    if self.has_last {
                        self.gap.extend(&units[i..i + gap]);
                    }
                    i += gap;
                    self.before = units[i - 1].into();
                }
                if i == units.len() {
                    return (i, None);
                }
                self.number.start = pos + i as u64;
                self.after_name = is_name(self.before);
            }
            let (mut value, mut len) = (self.number.value, self.number.len);
            while let Some(&unit) = units.get(i) {
                let digit = Into::<u32>::into(unit).wrapping_sub(u32::from(b'0'));
                if digit >= 10 {
                    break;
                }
                if len < MAX_DIGITS {
                    value = 10 * value + digit;
                }
                len += 1;
                i += 1;
            }
            (self.number.value, self.number.len) = (value, len);
            let Some(&after) = units.get(i) else { return (i, None) };
            let was = self.run;
            let run = if len <= MAX_DIGITS && !self.after_name && !is_name(after.into()) {
                Some(self.counted())
            } else {
                // A digit run that is no number: nothing before it can step to what follows.
                self.has_last = false;
                self.run = 0;
                None
            };
            self.number.len = 0;
            self.number.value = 0;
            if was >= 2 || run.is_some_and(|run| run >= 2) {
                return (i, Some((pos + i as u64, run)));
            }
        }
    }

    /// The number read ended: the count it continues, starts, or none (a count of one).
    fn counted(&mut self) -> u64 {
        let steps = self.has_last && self.number.value == self.last.value + 1;
        match self.gap.separator().filter(|_| steps) {
            Some(separator) if self.run >= 2 && self.separator.separator() == Some(separator) => self.run += 1,
            Some(_) => {
                self.run = 2;
                self.separator = self.gap;
                self.first = self.last;
            }
            None => self.run = 1,
        }
        (self.last, self.has_last) = (self.number, true);
        self.gap.len = 0;
        self.run
    }

    /// Where the count that the latest number ends starts.
    pub fn first_start(&self) -> u64 {
        self.first.start
    }

    /// The count's first number and its separator: one copy, as a finding reports it.
    pub fn block(&self) -> Vec<u32> {
        let separator = self.separator.separator().expect("a count of two or more has a separator");
        self.first.digits().chain(separator.iter().copied()).collect()
    }
}

/// What a read of the counts stopped at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CountEvent {
    /// A count reached its numbers ([`CounterRun::first`], [`CounterRun::block`]).
    Reached,
    /// A count that reached them gained a number.
    Continued,
}

/// The rule's state per stream: the reading of the lines long enough to hold a count.
#[derive(Clone, Debug)]
pub struct CounterRun {
    need: u64,
    /// A line is read once it holds this many units (`u64::MAX`: the rule is off).
    gate: u64,
    counting: Counting,
    /// Units before this are read, or belong to lines that were passed over.
    read_to: u64,
    /// What may be read now: the end of the line being read, or of what the stream has of it.
    readable_to: u64,
    /// The lines still to read after it: where each starts, and up to where.
    queued: Vec<(u64, u64)>,
    next: usize,
    /// The unit a read stopped at (`u64::MAX`: none), and what happened there.
    pending_at: u64,
    pending: CountEvent,
    /// The count that reached its numbers ended (a claim it made stops growing).
    broken: bool,
    /// The count being read reached its numbers.
    reached: bool,
}

impl CounterRun {
    pub fn new(rules: &Rules) -> CounterRun {
        let need = required_numbers(rules);
        CounterRun {
            need: need.unwrap_or(u64::MAX),
            gate: need.map_or(u64::MAX, |need| 2 * need),
            counting: Counting::after(u32::from(b'\n')),
            read_to: 0,
            readable_to: 0,
            queued: Vec::new(),
            next: 0,
            pending_at: u64::MAX,
            pending: CountEvent::Reached,
            broken: false,
            reached: false,
        }
    }

    /// Heap bytes held: the queue of lines to read (empty between pieces).
    pub fn heap_bytes(&self) -> usize {
        self.queued.capacity() * std::mem::size_of::<(u64, u64)>()
    }

    /// The units a line must hold before it is read.
    #[inline(always)]
    pub fn gate(&self) -> u64 {
        self.gate
    }

    /// Where the pending event is (`u64::MAX`: none).
    #[inline(always)]
    pub fn pending_at(&self) -> u64 {
        self.pending_at
    }

    /// Takes the pending event, which the caller has reached.
    pub fn take_pending(&mut self) -> CountEvent {
        self.pending_at = u64::MAX;
        self.pending
    }

    /// Whether the count that reached its numbers ended since the last call.
    pub fn take_broken(&mut self) -> bool {
        std::mem::take(&mut self.broken)
    }

    /// The count that just reached its numbers: where it starts and its first copy.
    pub fn first(&self) -> (u64, Vec<u32>) {
        (self.counting.first_start(), self.counting.block())
    }

    pub fn need(&self) -> u64 {
        self.need
    }

    /// The line starting at `line_start` holds the window's units up to `to` (a newline's
    /// position plus one, or the stream's end), at least the gate: what of it is not read yet
    /// is read by the next [`CounterRun::resume`], after the lines queued before it.
    pub fn queue(&mut self, line_start: u64, to: u64) {
        self.queued.push((line_start, to));
    }

    /// Reads on from where the last read stopped, through the queued lines, up to the first
    /// event.
    #[inline(never)]
    pub fn resume<T: Unit>(&mut self, window: &Window<T>) {
        loop {
            let (older, newer) = window.slices(self.read_to, self.readable_to);
            if self.read_slice(older) || self.read_slice(newer) {
                return;
            }
            let Some(&(line_start, to)) = self.queued.get(self.next) else {
                self.queued.clear();
                self.next = 0;
                return;
            };
            self.next += 1;
            if self.read_to <= line_start {
                // A line not read before: nothing earlier continues into it.
                self.counting = Counting::after(u32::from(b'\n'));
                self.read_to = line_start;
                self.end_count();
            }
            self.readable_to = to;
        }
    }

    /// Reads the units of `units`, which start at `read_to`; whether it stopped at an event (at
    /// the unit after a number, which is read next).
    fn read_slice<T: Unit>(&mut self, units: &[T]) -> bool {
        let mut i = 0;
        while i < units.len() {
            let (read, ended) = self.counting.read(&units[i..], self.read_to);
            i += read;
            self.read_to += read as u64;
            let Some((at, run)) = ended else { continue };
            match run {
                Some(run) if run == self.need => {
                    self.end_count();
                    self.reached = true;
                    (self.pending_at, self.pending) = (at, CountEvent::Reached);
                    return true;
                }
                Some(run) if run > self.need && self.reached => {
                    (self.pending_at, self.pending) = (at, CountEvent::Continued);
                    return true;
                }
                _ => self.end_count(),
            }
        }
        false
    }

    /// The count being read is over: if it reached its numbers, its claim stops growing.
    fn end_count(&mut self) {
        self.broken |= std::mem::take(&mut self.reached);
    }
}

/// A count of `units` from its first number at `start`: the numbers it counts, and where it
/// ends (the unit after its last number included), each number's start listed in `starts`.
pub(crate) fn count_from<S: Unit>(units: &[S], start: usize, starts: &mut Vec<u64>) -> (u64, u64) {
    let before = start.checked_sub(1).map_or(u32::from(b'\n'), |i| units[i].into());
    let mut counting = Counting::after(before);
    // The first number is the finding's start; a read tells each number from the second on.
    let (mut numbers, mut end) = (1, start as u64);
    starts.clear();
    starts.push(start as u64);
    let mut at = start;
    // Up to the first number that does not go on with the count (or the text's end).
    while let (read, Some((after, run))) = counting.read(&units[at..], at as u64) {
        at += read;
        if run != Some(numbers + 1) {
            break;
        }
        numbers += 1;
        end = after + 1;
        starts.push(counting.last.start);
    }
    (numbers, end)
}
