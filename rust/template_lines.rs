//! The template-lines rule, one line end at a time: lines drawn from a few templates that differ
//! in their numbers, recurring in or out of order. A model cycling through five numbered
//! activities, a prompt echoed again and again with its date changing, timestamped lines whose
//! sentence keeps coming back: no two copies are alike, so the exact rules never hold.
//!
//! A *number* is a maximal run of one to [`MAX_DIGITS`] ASCII digits that touches no letter inside
//! its line (`on 21 March` holds one; `shHereDoc09`, `x1`, `3rd` none: a number inside a name is
//! part of the name; `1958` none: years and ids are data, which counts on from large values where a
//! model numbers from 1), nor do the digits after a decimal point (`0.24`, `5.6.0` hold one, their
//! first run: a fraction or a version's later parts are a value's, where a model's counter is a
//! whole number; a release list, `Upgraded from version 0.24 to 0.34.`, differs in them line after
//! line, where `12.0s-13.0s:` keeps them). A line's *template* is its content (trailing whitespace
//! dropped) with each number masked, whatever its width. Only lines of [`MIN_UNITS`] units or more
//! of content count: shorter ones are passed over, neither read nor remembered. A *numbered* line
//! holds a number, is not indented as Markdown indents code (a tab first, or four spaces: code is
//! no prose), and fits `max_long_period` units (newline excluded), as a counter line does, so that
//! it is whole in the window at its newline whatever the chunking.
//!
//! The *lookback* is the latest [`LOOKBACK`] lines that hold an ASCII digit ([`digit_line`]):
//! lines between the numbered ones that hold none take no place in it, so an item of a heading and
//! a paragraph is remembered as long as an item of one line. A numbered line *recurs* when a
//! numbered line of the lookback shares its template, whether its text is new or a copy (a cycle of
//! a few lines in no fixed order is no exact repetition for the exact rules), and it recurs as a
//! *near-copy* when two numbered lines of the lookback share a template and nothing in the text
//! since the latest line of the lookback is new, its own line included: each token of it is one of
//! the [`NEAR_MEMORY`] units' before that stretch ([`nothing_new`]; a prompt echoed in a new
//! wording of its own words, where a row of a table or of a reference brings a new name or id).
//! The stretch is [`NEAR_STRETCH`] units at most: a model's near-copies follow each other,
//! where prose between numbered lines runs on (and would cost its reading).
//! A near-copy counts no template. A streak is numbered
//! lines that each recur and are prose ([`is_prose`]), or are items of a counted list that come
//! back: a line that recurs as a copy of the latest line of its template save its first number,
//! which is one more than the first number of the lookback's latest line with the same text
//! before it, and that is no data to the counter rule ([`TemplateLines::counted_item`]: a model
//! listing countries, `N. China (1.33 billion)`, with the same few coming back). Any other
//! numbered line ends it, and so does a line of the lookback whose digits are no number (a name
//! such as `Group1`, an id of four digits or more: code or data, between which a recurring
//! template is no loop of prose), and so does a line indented as code that holds a digit (code is
//! no prose); lines with no digit (or too short, too long) and other lines indented as code
//! neither continue nor end it. The rule holds at the first streak line where the streak has
//! `template_min_lines` lines and at least [`LINES_PER_TEMPLATE`] lines per distinct template in
//! it, and, if a line of it is no prose, `code_counter_min_lines` lines and two templates
//! ([`holds`]). The finding is the streak's first line: `start` where it starts, `block` its
//! content, `repeats` the streak's lines.
//!
//! What a line costs. Most lines of source code are indented (one vector compare tells them apart),
//! and most other lines of text hold no digit (one vector pass over the line): both are passed
//! over. A line with a digit is summed, its units that are no digit and their count
//! ([`Unit::non_digit_digest`]): lines of one template agree on that digest whatever their numbers,
//! so it is compared with the lookback's lines only through their digests (one vector compare of 16
//! keys), and read unit by unit (its template, its words) only when a key matches or while a streak
//! runs. While two lines of the lookback share a template (one compare tells whether two lines
//! have a template's number at all), a line whose key matches none may be a near-copy: it is read
//! on a path of its own, which builds no template, when the stretch is short enough, its prose
//! first, then its stretch's tokens, each searched in the memory a block of units at a time; the
//! stretch and its memory are read from the window (they fit `max_long_period`, which it holds).
//! A remembered line with a digit that would leave the window is copied out of it first. A line
//! that recurs but is no prose is asked whether it is a copy of the line it recurs to first (a
//! compare of two lines in hand), and only then is the lookback's latest line read. Clean text
//! costs 13-15% more instructions than without the rule (docs/benchmarks.md).

use crate::classes::{classify, is_ascii_digit, is_whitespace, UnitClass};
use crate::counters::is_data_line;
use crate::lanes::{Unit, LANES};
use crate::rules::Rules;
use crate::window::Window;

/// The lines a numbered line is compared with: the latest lines that hold a digit
/// ([`digit_line`]).
pub const LOOKBACK: usize = 16;

/// The shortest content (units, leading whitespace counted) a line must have to count.
pub const MIN_UNITS: u64 = 6;

/// A streak needs at least this many lines per distinct template in it, as `2 * lines >= 3 *
/// templates`: a list that merely shares a numbered heading's template now and then has fewer.
pub const LINES_PER_TEMPLATE: (u64, u64) = (3, 2);

/// The most digits a number has: a longer run (a year, an id, a timestamp) is data that counts
/// on from a large value, where a model numbers from 1, and stays in the template as it is.
pub const MAX_DIGITS: usize = 3;

/// What a number is replaced with in a template: no code point.
const MASK: u32 = u32::MAX;

/// The units before a stretch that a near-copy is read against ([`nothing_new`]).
pub const NEAR_MEMORY: u64 = 1024;

/// The longest stretch a near-copy closes (units from the end of the latest remembered line's
/// content to the near-copy's newline).
pub const NEAR_STRETCH: u64 = 256;

/// What the end of a line did to the streak of template lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TemplateEvent {
    /// The line continues the streak, or starts one (before it held, or after).
    Continued,
    /// The line ends the streak that was running.
    Broken,
    /// The streak just held ([`TemplateLines::first_line`], [`TemplateLines::lines`]).
    Reached,
}

/// Whether a remembered line is prose, once a line recurred to it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Prose {
    Unknown,
    No,
    Yes,
}

/// A line of the lookback: where it starts, its content's length, and, for a line with a digit,
/// its template's number, its prose (both known once a line recurred to it) and its copy once
/// it had to leave the window.
#[derive(Clone, Debug)]
struct Remembered {
    start: u64,
    len: u64,
    /// The template's number (0: not known yet; a line with no number never gets one).
    template: u32,
    prose: Prose,
    copy: Option<Vec<u32>>,
}

impl Remembered {
    fn units<T: Unit>(&self, window: &Window<T>, into: &mut Vec<u32>) {
        into.clear();
        match &self.copy {
            Some(copy) => into.extend_from_slice(copy),
            None => {
                let (older, newer) = window.slices(self.start, self.start + self.len);
                into.extend(older.iter().chain(newer).map(|&unit| unit.into()));
            }
        }
    }
}

/// The streak of template lines the latest numbered lines belong to.
#[derive(Clone, Debug)]
struct Streak {
    lines: u64,
    /// The distinct templates among its lines (at most [`LOOKBACK`]: a line's template is one
    /// of the lookback's, so a template first seen inside the streak was in the lookback of its
    /// first line).
    templates: Vec<u32>,
    /// Whether every line of it is prose (else it holds an item of a counted list:
    /// [`TemplateLines::counted_item`]).
    all_prose: bool,
    reached: bool,
    first_start: u64,
    first_line: Vec<u32>,
}

#[derive(Clone, Debug)]
pub struct TemplateLines {
    rules: Rules,
    lookback: [Remembered; LOOKBACK],
    /// The keys of the lookback's lines (see [`key`]), beside them for one vector compare.
    keys: [u32; LOOKBACK],
    /// Bit `i`: `lookback[i]` holds a digit (it may be numbered).
    with_digit: u32,
    /// Bit `i`: `lookback[i]` has a template's number (it recurred or was recurred to; a
    /// near-copy has none).
    with_template: u32,
    /// The slot the next line goes in.
    next: usize,
    /// Where the oldest remembered line with a digit not copied yet may start (a lower bound;
    /// `u64::MAX`: none): what `before_append` compares with.
    uncopied_from: u64,
    streak: Option<Streak>,
    templates_made: u32,
}

impl TemplateLines {
    pub fn new(rules: &Rules) -> TemplateLines {
        let empty = Remembered { start: 0, len: 0, template: 0, prose: Prose::Unknown, copy: None };
        TemplateLines {
            rules: *rules,
            lookback: std::array::from_fn(|_| empty.clone()),
            keys: [0; LOOKBACK],
            with_digit: 0,
            with_template: 0,
            next: 0,
            uncopied_from: u64::MAX,
            streak: None,
            templates_made: 0,
        }
    }

    pub fn heap_bytes(&self) -> usize {
        let copies: usize = self.lookback.iter().filter_map(|line| line.copy.as_ref()).map(Vec::capacity).sum();
        let first = self.streak.as_ref().map_or(0, |streak| streak.first_line.capacity() + streak.templates.capacity());
        (copies + first) * std::mem::size_of::<u32>()
    }

    /// The streak's lines so far.
    pub fn lines(&self) -> u64 {
        self.streak.as_ref().map_or(0, |streak| streak.lines)
    }

    /// Where the streak's first line starts, and its content.
    pub fn first_line(&self) -> (u64, Vec<u32>) {
        let streak = self.streak.as_ref().expect("a streak runs when it holds");
        (streak.first_start, streak.first_line.clone())
    }

    /// Before units are appended to `window`: copies the remembered lines with a digit that
    /// would leave it (`leaving` is the first position still held after the append). Inlined:
    /// nearly always no such line is leaving (one compare).
    #[inline(always)]
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        if self.uncopied_from < leaving {
            self.copy_leaving(window, leaving);
        }
    }

    #[inline(never)]
    fn copy_leaving<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        self.uncopied_from = u64::MAX;
        for (i, line) in self.lookback.iter_mut().enumerate() {
            if self.with_digit & (1 << i) == 0 || line.copy.is_some() {
                continue;
            }
            if line.start < leaving {
                let mut copy = Vec::new();
                line.units(window, &mut copy);
                line.copy = Some(copy);
            } else {
                self.uncopied_from = self.uncopied_from.min(line.start);
            }
        }
    }

    /// The non-blank line from `start`, whose content is `content_len` units, ended at the
    /// newline `x`: what it did to the streak, if one was running or it started one.
    #[inline(always)]
    pub fn on_line<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        x: u64,
        window: &Window<T>,
    ) -> Option<TemplateEvent> {
        if content_len < MIN_UNITS {
            return None;
        }
        if x - start > u64::from(self.rules.max_long_period) {
            return None;
        }
        if indented_as_code(window, start) {
            // Its digits are looked for only while a streak runs, so code still costs one vector
            // compare a line.
            return if self.streak.is_some() { self.read_code_line(start, content_len, window) } else { None };
        }
        if !has_digit(window, start, content_len) {
            return None;
        }
        let digest = non_digit_digest(window, start, content_len);
        let key = key(digest);
        let matches = self.key_matches(key);
        if matches == 0 && self.streak.is_none() {
            // It may be numbered, but it recurs to no line and no streak runs: it changes
            // nothing yet, and is read if a later line's key matches its own, unless it is a
            // near-copy, which needs two lines of the lookback that share a template.
            if self.templates_shared() {
                return self.read_near_copy(start, content_len, key, x, window);
            }
            self.remember(start, content_len, Some(key));
            return None;
        }
        self.read_line(start, content_len, key, matches, x, window)
    }

    /// A line indented as code, read while a streak runs: code is no prose, and with a digit it
    /// ends the streak, as a numbered line that is no prose does (numbered lines of words between
    /// blocks of code: a compiler's rewrite rules, a test's expected outputs).
    #[cold]
    #[inline(never)]
    fn read_code_line<T: Unit>(&mut self, start: u64, content_len: u64, window: &Window<T>) -> Option<TemplateEvent> {
        if has_digit(window, start, content_len) {
            self.streak.take().map(|_| TemplateEvent::Broken)
        } else {
            None
        }
    }

    /// Where the stretch a line closes starts: at the end of the latest remembered line's
    /// content (derived, where a position kept for it would be written for every line).
    fn gap_start(&self) -> u64 {
        let latest = &self.lookback[(self.next + LOOKBACK - 1) % LOOKBACK];
        latest.start + latest.len
    }

    /// A line with a digit that recurs to no line while no streak runs, and may be a near-copy:
    /// it starts a streak if it is one.
    #[cold]
    #[inline(never)]
    fn read_near_copy<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        key: u32,
        x: u64,
        window: &Window<T>,
    ) -> Option<TemplateEvent> {
        if x - self.gap_start() > NEAR_STRETCH {
            self.remember(start, content_len, Some(key));
            return None;
        }
        let line = window.units(start, start + content_len);
        if first_number(&line).is_some() && self.is_near_copy(&line, x, window) {
            return Some(self.take_near_copy(start, content_len, key, &line));
        }
        self.remember(start, content_len, Some(key));
        None
    }

    /// A near-copy goes on with the streak (or starts one) and is remembered as prose.
    fn take_near_copy(&mut self, start: u64, content_len: u64, key: u32, line: &[u32]) -> TemplateEvent {
        let event = self.continue_streak(start, line, 0, true);
        let new = self.remember(start, content_len, Some(key));
        self.lookback[new].prose = Prose::Yes;
        event
    }

    /// Whether two lines of the lookback share a template: lines of one template share its
    /// number, and no two templates share one. One compare while fewer than two lines have
    /// a number, as in nearly all clean text.
    #[inline(always)]
    fn templates_shared(&self) -> bool {
        let mut bits = self.with_template;
        // Fewer than two bits set (a count of ones is no one instruction on every x86-64).
        if bits & bits.wrapping_sub(1) == 0 {
            return false;
        }
        let mut seen = [0u32; LOOKBACK];
        let mut n = 0;
        while bits != 0 {
            let template = self.lookback[bits.trailing_zeros() as usize].template;
            if seen[..n].contains(&template) {
                return true;
            }
            seen[n] = template;
            n += 1;
            bits &= bits - 1;
        }
        false
    }

    /// The slots of the lookback whose line has a digit and the key `key`.
    #[inline(always)]
    fn key_matches(&self, key: u32) -> u32 {
        let equal = self.keys.iter().enumerate().fold(0u32, |bits, (i, &k)| bits | (u32::from(k == key) << i));
        equal & self.with_digit
    }

    /// Puts the line in the lookback, in place of its oldest line (`key`: it holds a digit).
    #[inline(always)]
    fn remember(&mut self, start: u64, len: u64, key: Option<u32>) -> usize {
        let slot = self.next;
        self.next = if slot + 1 == LOOKBACK { 0 } else { slot + 1 };
        let line = &mut self.lookback[slot];
        (line.start, line.len, line.template, line.prose) = (start, len, 0, Prose::Unknown);
        line.copy = None;
        self.with_template &= !(1 << slot);
        match key {
            Some(key) => {
                self.keys[slot] = key;
                self.with_digit |= 1 << slot;
                self.uncopied_from = self.uncopied_from.min(start);
            }
            None => self.with_digit &= !(1 << slot),
        }
        slot
    }

    /// A line with a digit whose key matches a remembered line's, or read while a streak runs:
    /// reads it, and the remembered lines its key matches.
    #[inline(never)]
    fn read_line<T: Unit>(
        &mut self,
        start: u64,
        content_len: u64,
        key: u32,
        matches: u32,
        x: u64,
        window: &Window<T>,
    ) -> Option<TemplateEvent> {
        let line = window.units(start, start + content_len);
        let (mut line_template, mut other, mut other_template) = (Vec::new(), Vec::new(), Vec::new());
        let numbered = template_of(&line, &mut line_template);
        // The remembered line it recurs to: the latest of its template.
        let mut recurs_to = None;
        if numbered {
            for back in 1..=LOOKBACK {
                let slot = (self.next + LOOKBACK - back) % LOOKBACK;
                if matches & (1 << slot) == 0 {
                    continue;
                }
                self.lookback[slot].units(window, &mut other);
                if !template_of(&other, &mut other_template) || other_template != line_template {
                    continue;
                }
                recurs_to = Some(slot);
                break;
            }
        }
        let event = match recurs_to {
            None if numbered && self.templates_shared() && self.is_near_copy(&line, x, window) => {
                return Some(self.take_near_copy(start, content_len, key, &line));
            }
            // No number (read while a streak runs), or no line it recurs to: the streak ends.
            None => self.streak.take().map(|_| TemplateEvent::Broken),
            Some(slot) => {
                let prose = match self.lookback[slot].prose {
                    Prose::Unknown => {
                        if is_prose(&line) {
                            Prose::Yes
                        } else {
                            Prose::No
                        }
                    }
                    known => known,
                };
                if self.lookback[slot].template == 0 {
                    self.templates_made += 1;
                    self.lookback[slot].template = self.templates_made;
                    self.with_template |= 1 << slot;
                }
                self.lookback[slot].prose = prose;
                let template = self.lookback[slot].template;
                // A line that is no prose goes on only as an item of a counted list that comes back
                // (`other` holds the line it recurs to).
                let event = if prose == Prose::Yes || self.counted_item(&line, &other, window, &mut other_template) {
                    Some(self.continue_streak(start, &line, template, prose == Prose::Yes))
                } else {
                    self.streak.take().map(|_| TemplateEvent::Broken)
                };
                let new = self.remember(start, content_len, Some(key));
                (self.lookback[new].template, self.lookback[new].prose) = (template, prose);
                self.with_template |= 1 << new;
                return event;
            }
        };
        if numbered {
            self.remember(start, content_len, Some(key));
        } else {
            self.remember(start, content_len, None);
        }
        event
    }

    /// Whether a numbered line that recurs to no line of the lookback, ended at the newline `x`,
    /// is a near-copy, once two lines of the lookback share a template (which the callers
    /// ask first): it is prose, and the stretch from the end of the latest remembered line
    /// ([`Self::gap_start`]) to `x` brings nothing new after the [`NEAR_MEMORY`] units before it
    /// ([`near_memory_start`], [`nothing_new`]).
    fn is_near_copy<T: Unit>(&self, line: &[u32], x: u64, window: &Window<T>) -> bool {
        let gap_start = self.gap_start();
        let Some(from) = near_memory_start(gap_start, x, &self.rules) else { return false };
        is_prose(line) && nothing_new(&window.units(from, gap_start), &window.units(gap_start, x))
    }

    /// Whether a numbered line is an item of a counted list that comes back: a copy of `other`, the
    /// line it recurs to, save its first number ([`copy_save_count`], asked first: a record of
    /// one shape brings new values), that counts on from the latest line of the lookback
    /// ([`list_counts_on`]) and is no data ([`is_data_line`], asked last: a table's rows and
    /// columns of values are the counter rule's, with its count for data).
    /// `before` is room to read the latest line into.
    fn counted_item<T: Unit>(&self, line: &[u32], other: &[u32], window: &Window<T>, before: &mut Vec<u32>) -> bool {
        let latest = (self.next + LOOKBACK - 1) % LOOKBACK;
        if self.with_digit & (1 << latest) == 0 || !copy_save_count(line, other) {
            return false;
        }
        self.lookback[latest].units(window, before);
        list_counts_on(before, line) && !is_data_line(line)
    }

    /// A line that recurs goes on with the streak, or starts one: `template` is the number of its
    /// template if it recurs to a line of it, 0 for a near-copy (which counts no template);
    /// `prose`, whether it is prose (else it is an item of a counted list).
    fn continue_streak(&mut self, start: u64, line: &[u32], template: u32, prose: bool) -> TemplateEvent {
        let streak = self.streak.get_or_insert_with(|| Streak {
            lines: 0,
            templates: Vec::new(),
            all_prose: true,
            reached: false,
            first_start: start,
            first_line: line.to_vec(),
        });
        streak.lines += 1;
        streak.all_prose &= prose;
        if template != 0 && !streak.reached && !streak.templates.contains(&template) {
            streak.templates.push(template);
        }
        let holds = holds(&self.rules, streak.lines, streak.templates.len() as u64, streak.all_prose);
        if holds && !streak.reached {
            streak.reached = true;
            TemplateEvent::Reached
        } else {
            TemplateEvent::Continued
        }
    }
}

/// Whether the line from `start` is indented as Markdown indents code: a tab first, or four
/// spaces. Such a line is code, never prose, so its numbers are not read (most lines of source
/// code are, which keeps the rule's cost on code to one vector compare a line).
#[inline(always)]
fn indented_as_code<T: Unit>(window: &Window<T>, start: u64) -> bool {
    let lanes = window.lanes(start);
    T::equal_to(lanes, T::store(u32::from(b' '))) & 0xF == 0xF || Into::<u32>::into(lanes[0]) == u32::from(b'\t')
}

/// Whether the line from `start` (`len` units) holds an ASCII digit, read 16 units at a time.
#[inline(always)]
fn has_digit<T: Unit>(window: &Window<T>, start: u64, len: u64) -> bool {
    let mut slot = window.slot(start);
    let mut left = len as usize;
    while left > 0 {
        let n = left.min(LANES);
        if T::digits(window.lanes_back(slot, 0)) & (u32::MAX >> (32 - n)) != 0 {
            return true;
        }
        slot = window.slot_after(slot, n);
        left -= n;
    }
    false
}

/// The sum of a line's units that are no ASCII digit plus their count times 2^32, from the
/// window 16 units at a time: lines of one template agree on it.
#[inline(always)]
fn non_digit_digest<T: Unit>(window: &Window<T>, start: u64, len: u64) -> u64 {
    let mut slot = window.slot(start);
    let mut left = len as usize;
    let mut digest = 0u64;
    while left > 0 {
        let n = left.min(LANES);
        digest = digest.wrapping_add(T::non_digit_digest(window.lanes_back(slot, 0), n));
        slot = window.slot_after(slot, n);
        left -= n;
    }
    digest
}

/// A line's key: its digest, mixed into 32 bits.
#[inline(always)]
fn key(digest: u64) -> u32 {
    (digest.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32) as u32
}

fn is_letter(unit: u32) -> bool {
    classify(unit) == UnitClass::Letter
}

/// What a line read whole is to the rule, if its content (trailing whitespace dropped) has
/// [`MIN_UNITS`] units or more and an ASCII digit and the line fits `max_long_period` (`span`:
/// its units before the newline): [`DigitLine::Remembered`] (it goes into the lookback), or
/// [`DigitLine::Code`] if it is indented as code (it ends a streak). `None`: it is passed over.
pub(crate) fn digit_line(content: &[u32], span: usize, rules: &Rules) -> Option<DigitLine> {
    let read = content.len() as u64 >= MIN_UNITS
        && span <= rules.max_long_period as usize
        && content.iter().any(|&u| is_ascii_digit(u));
    read.then(|| if code_indented(content) { DigitLine::Code } else { DigitLine::Remembered })
}

/// A line with a digit that the rule reads ([`digit_line`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum DigitLine {
    Remembered,
    Code,
}

/// Whether a line starts as Markdown indents code: a tab, or four spaces.
fn code_indented(line: &[u32]) -> bool {
    line.first() == Some(&u32::from(b'\t')) || line.starts_with(&[u32::from(b' '); 4])
}

/// Writes the template of `line` (its numbers masked) into `template`; whether it holds a number
/// and so is numbered (unless it is indented as code: a tab first, or four spaces).
pub(crate) fn template_of(line: &[u32], template: &mut Vec<u32>) -> bool {
    if code_indented(line) {
        template.clear();
        template.extend_from_slice(line);
        return false;
    }
    mask_numbers(line, template)
}

/// Writes `line` with its numbers masked into `template`; whether it holds a number.
fn mask_numbers(line: &[u32], template: &mut Vec<u32>) -> bool {
    template.clear();
    // Once: pushed a unit at a time, an empty vector would grow (and be copied) again and again.
    template.reserve(line.len());
    let mut numbered = false;
    let mut i = 0;
    while i < line.len() {
        if !is_ascii_digit(line[i]) {
            template.push(line[i]);
            i += 1;
            continue;
        }
        let (end, number) = digit_run(line, i);
        if number {
            template.push(MASK);
            numbered = true;
        } else {
            template.extend_from_slice(&line[i..end]);
        }
        i = end;
    }
    numbered
}

/// Where the first number of `line` is and its value, as [`mask_numbers`] finds numbers (without
/// writing a template); `None` if it holds none.
pub(crate) fn first_number(line: &[u32]) -> Option<(std::ops::Range<usize>, u32)> {
    let mut i = 0;
    while i < line.len() {
        if !is_ascii_digit(line[i]) {
            i += 1;
            continue;
        }
        let (end, number) = digit_run(line, i);
        if number {
            let value = line[i..end].iter().fold(0, |value, &digit| value * 10 + digit - u32::from(b'0'));
            return Some((i..end, value));
        }
        i = end;
    }
    None
}

/// Whether `line` counts on from `before`: both hold a number, the first number of `line` is one
/// more than that of `before`, and the text before it is the same (a list's count sits in one
/// place: `7. China` after `6. Russia`, `Exercise 5` after `Exercise 4 (1)`, where a line that
/// happens to hold a number one more, `RETURN $2 + $1;` after `... COST 1`, does not count on).
pub(crate) fn list_counts_on(before: &[u32], line: &[u32]) -> bool {
    match (first_number(before), first_number(line)) {
        (Some((a, before_value)), Some((b, value))) => {
            before_value + 1 == value && before[..a.start] == line[..b.start]
        }
        _ => false,
    }
}

/// Whether two numbered lines are the same save their first numbers: an item of a counted list
/// that comes back as it was, where a record of one shape (`{"id": N, "temp": N.5}`) brings new
/// values.
pub(crate) fn copy_save_count(line: &[u32], other: &[u32]) -> bool {
    match (first_number(line), first_number(other)) {
        (Some((a, _)), Some((b, _))) => line[..a.start] == other[..b.start] && line[a.end..] == other[b.end..],
        _ => false,
    }
}

/// Whether a streak of `lines` lines with `templates` distinct templates holds: at least
/// [`LINES_PER_TEMPLATE`] lines per template and `template_min_lines` lines, and if a line of it is
/// no prose (a counted list whose items come back) `code_counter_min_lines` lines as well and two
/// templates at least (one template counting on is the counter rule's, with its classes).
pub(crate) fn holds(rules: &Rules, lines: u64, templates: u64, all_prose: bool) -> bool {
    let (per, of) = LINES_PER_TEMPLATE;
    let counted = all_prose || (lines >= u64::from(rules.code_counter_min_lines) && templates >= 2);
    lines >= u64::from(rules.template_min_lines) && of * lines >= per * templates && counted
}

/// The run of digits from `run` (a digit after none): where it ends, and whether it is a number
/// (at most [`MAX_DIGITS`] digits, touching no letter, and not after a decimal point).
fn digit_run(line: &[u32], run: usize) -> (usize, bool) {
    let end = run + line[run..].iter().take_while(|&&u| is_ascii_digit(u)).count();
    let touches_letter = (run > 0 && is_letter(line[run - 1])) || (end < line.len() && is_letter(line[end]));
    let fraction = || run >= 2 && line[run - 1] == u32::from(b'.') && is_ascii_digit(line[run - 2]);
    (end, !touches_letter && end - run <= MAX_DIGITS && !fraction())
}

/// Whether two numbered lines of `lookback` (templates; `None`: no number) share a template.
pub(crate) fn templates_shared(lookback: &[Option<Vec<u32>>]) -> bool {
    let mut numbered: Vec<&Vec<u32>> = lookback.iter().flatten().collect();
    numbered.sort();
    numbered.windows(2).any(|pair| pair[0] == pair[1])
}

/// Where the memory of a near-copy's stretch starts: [`NEAR_MEMORY`] units before `gap_start`
/// (or the text's start), if the memory and the stretch up to the newline `x` fit
/// `max_long_period` units, which the window always holds; `None` (no near-copy) otherwise.
pub(crate) fn near_memory_start(gap_start: u64, x: u64, rules: &Rules) -> Option<u64> {
    let from = gap_start.saturating_sub(NEAR_MEMORY);
    (x - gap_start <= NEAR_STRETCH && x - from <= u64::from(rules.max_long_period)).then_some(from)
}

/// Whether `stretch` brings nothing new after `memory`: each of its tokens is one of memory's.
/// Tokens are runs of non-whitespace stripped of stops, brackets, quotes and emphasis
/// ([`TOKEN_EDGE`]) at both ends, with their numbers masked ([`mask_numbers`]: a number
/// touches no letter inside its token as inside its line); case is kept. The stretch is read a
/// token at a time up to its first new one, each looked for in memory where its first unit
/// occurs: in clean text a new token comes within a few, so most calls read memory a few times.
/// A token with no digit is looked for in memory as it is (it cannot occur where memory's numbers
/// are masked: a mask is no edge, as a digit is none); one with a digit, once every other token
/// is known, among memory's tokens with a digit, each masked.
pub(crate) fn nothing_new(memory: &[u32], stretch: &[u32]) -> bool {
    let mut with_digit = Vec::new();
    // From the line back: a clean line's own words are the likeliest to be new.
    for token in tokens(stretch).rev() {
        if token.iter().any(|&u| is_ascii_digit(u)) {
            with_digit.push(token);
        } else if !holds_token(memory, token) {
            return false;
        }
    }
    // A token with a digit can only be one of memory's tokens with a digit, masked alike.
    let (mut wanted, mut known) = (Vec::new(), Vec::new());
    with_digit.iter().all(|token| {
        mask_numbers(token, &mut wanted);
        tokens(memory).filter(|other| other.iter().any(|&u| is_ascii_digit(u))).any(|other| {
            mask_numbers(other, &mut known);
            known == wanted
        })
    })
}

/// Whether `text` holds `token` as a token: where it occurs, the units between it and the
/// whitespace (or the text's ends) on either side are all edges. Whether an occurrence starts a
/// token is asked first (one unit back, nearly always), so only the starts of tokens are
/// compared: however the text is made, the compares of one token read it about once.
fn holds_token(text: &[u32], token: &[u32]) -> bool {
    let mut from = 0;
    while let Some(i) = find(&text[from..], token[0]) {
        let at = from + i;
        from = at + 1;
        if !text[..at].iter().rev().take_while(|&&u| !is_whitespace(u)).all(|&u| in_set(u, TOKEN_EDGE)) {
            continue;
        }
        let end = at + token.len();
        if end <= text.len()
            && text[at..end] == *token
            && text[end..].iter().take_while(|&&u| !is_whitespace(u)).all(|&u| in_set(u, TOKEN_EDGE))
        {
            return true;
        }
    }
    false
}

/// Where `unit` first occurs in `text`: compared a block at a time, which the compiler turns
/// into vector compares (memory is read for each token of a stretch).
fn find(text: &[u32], unit: u32) -> Option<usize> {
    const BLOCK: usize = 16;
    let mut blocks = text.chunks(BLOCK);
    let block = blocks.position(|block| block.iter().fold(false, |seen, &u| seen | (u == unit)))?;
    let at = block * BLOCK;
    text[at..].iter().position(|&u| u == unit).map(|i| at + i)
}

fn tokens(units: &[u32]) -> impl DoubleEndedIterator<Item = &[u32]> {
    units.split(|&u| is_whitespace(u)).filter_map(|token| {
        let lead = token.iter().take_while(|&&u| in_set(u, TOKEN_EDGE)).count();
        let trail = token[lead..].iter().rev().take_while(|&&u| in_set(u, TOKEN_EDGE)).count();
        (lead + trail < token.len()).then(|| &token[lead..token.len() - trail])
    })
}

/// What a token is stripped of at both ends before it is compared: stops, brackets, quotes,
/// emphasis.
const TOKEN_EDGE: u128 = ascii_set(b".,;:!?()[]{}\"'*_`<>");

/// Whether a line reads as prose: six or more CJK, kana or hangul units, or at least three
/// words with at most one other token per three words (numbers and list marks are neither).
/// A word is letters, with `'`, `’` or `-` between them, between opening and closing
/// punctuation: at least two letters (or `a`, `A`, `I`), no camel case (a name), and no `:` at
/// its end unless it ends the line (`key:` is a field). Digits never sit in a word, and a token
/// that is a number stays one whatever its digits' count, so lines of one template agree.
pub(crate) fn is_prose(line: &[u32]) -> bool {
    words_prose(line)
        || line.iter().filter(|&&u| matches!(u, 0x3040..=0x30ff | 0x3400..=0x9fff | 0xac00..=0xd7af)).count() >= 6
}

/// Whether a line holds three words or more and at most one other token per three words.
fn words_prose(line: &[u32]) -> bool {
    let mut tokens = line.split(|&u| is_whitespace(u)).filter(|token| !token.is_empty()).peekable();
    let (mut words, mut others) = (0u64, 0u64);
    while let Some(token) = tokens.next() {
        if is_word(token, tokens.peek().is_none()) {
            words += 1;
        } else if !is_number_token(token) && !is_mark(token) {
            others += 1;
        }
    }
    words >= 3 && 3 * others <= words
}

/// A set of ASCII units as a mask: one test per unit where a search of a string is a loop.
const fn ascii_set(units: &[u8]) -> u128 {
    let mut set = 0;
    let mut i = 0;
    while i < units.len() {
        set |= 1 << units[i];
        i += 1;
    }
    set
}

#[inline(always)]
fn in_set(unit: u32, set: u128) -> bool {
    unit < 128 && (set >> unit) & 1 == 1
}

const WORD_OPENING: u128 = ascii_set(b"([\"'*_`");
const WORD_CLOSING: u128 = ascii_set(b")]\"'*_`.,;:!?");
const WORD_JOINING: u128 = ascii_set(b"'-");
const NUMBER_OPENING: u128 = ascii_set(b"([#$");
const NUMBER_INNER: u128 = ascii_set(b".,:/%-");
const NUMBER_CLOSING: u128 = ascii_set(b")].,;:!?");

fn is_word(token: &[u32], last: bool) -> bool {
    if !last && token.last() == Some(&u32::from(b':')) {
        return false;
    }
    let lead = token.iter().take_while(|&&u| in_set(u, WORD_OPENING)).count();
    let trail = token[lead..].iter().rev().take_while(|&&u| in_set(u, WORD_CLOSING)).count();
    let core = &token[lead..token.len() - trail];
    // One pass: letters, joined by one joining unit at a time, no lowercase letter before an
    // uppercase one (camel case, which only letters of the core can make).
    let (mut letters, mut after_letter, mut after_lower) = (0, false, false);
    for &u in core {
        let letter = is_letter(u);
        if letter {
            letters += 1;
        } else if !after_letter || !(in_set(u, WORD_JOINING) || u == u32::from('’')) {
            return false;
        }
        if after_lower && u.wrapping_sub(u32::from(b'A')) < 26 {
            return false;
        }
        after_lower = u.wrapping_sub(u32::from(b'a')) < 26;
        after_letter = letter;
    }
    let short_word = matches!(token, [u] if [u32::from(b'a'), u32::from(b'A'), u32::from(b'I')].contains(u));
    after_letter && (letters >= 2 || short_word)
}

fn is_number_token(token: &[u32]) -> bool {
    let lead = token.iter().take_while(|&&u| in_set(u, NUMBER_OPENING)).count();
    let rest = &token[lead..];
    let Some((&first, rest)) = rest.split_first() else { return false };
    let body = rest.iter().take_while(|&&u| is_ascii_digit(u) || in_set(u, NUMBER_INNER)).count();
    is_ascii_digit(first) && rest[body..].iter().all(|&u| in_set(u, NUMBER_CLOSING))
}

fn is_mark(token: &[u32]) -> bool {
    const MARKS: [&str; 10] = ["-", "*", "+", "|", ">", "#", "##", "###", "—", "–"];
    MARKS.iter().any(|mark| mark.chars().map(u32::from).eq(token.iter().copied()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn units(s: &str) -> Vec<u32> {
        s.chars().map(u32::from).collect()
    }

    fn template(s: &str) -> Option<Vec<u32>> {
        let mut out = Vec::new();
        template_of(&units(s), &mut out).then_some(out)
    }

    #[test]
    fn numbers_touch_no_letter() {
        assert_eq!(template("Lisbon on 21 March"), template("Lisbon on 3 March"));
        assert_eq!(template("shHereDoc09 is a name"), None);
        assert_eq!(template("x1 and 3rd and 第3章"), None);
        assert_ne!(template("Step 1: go"), template("Step 1. go"));
        assert_eq!(template("12:30 then 1.5"), template("9:05 then 10.5"));
        assert_eq!(template("- 1958: won the final"), None, "a year is data");
    }

    #[test]
    fn code_with_a_digit_ends_a_streak() {
        let rules = Rules::new(crate::RuleValues { template_min_lines: 3, ..*crate::DEFAULT_RULES }).unwrap();
        let item = |n: u32| format!("{n}. Check the logs of the server\n");
        let lines: String = (1..=2).map(item).chain(["    retry(3)\n".to_string()]).chain((3..=4).map(item)).collect();
        assert!(crate::scan_units(&units(&lines), &rules).is_empty(), "two lines each side of the code");
        let passed: String = (1..=2).map(item).chain(["    retry()\n".to_string()]).chain((3..=4).map(item)).collect();
        assert!(!crate::scan_units(&units(&passed), &rules).is_empty(), "code without a digit is passed over");
    }

    #[test]
    fn digits_after_a_decimal_point_are_no_number() {
        assert_ne!(
            template("Upgraded from version 0.24 to 0.34."),
            template("Upgraded from version 1.38 to 1.52."),
            "a version's later parts are its own"
        );
        assert_ne!(template("Introduced in Perl 5.6.0"), template("Introduced in Perl 5.005"));
        assert_eq!(template("12.0s-13.0s: I don't know"), template("13.0s-14.0s: I don't know"));
        assert_eq!(template("Step 2. Check the logs"), template("Step 3. Check the logs"), "a point after a number");
        assert_eq!(template("v.2 of 10"), template("v.3 of 12"), "a point after no digit");
    }

    #[test]
    fn a_counted_list_whose_items_come_back_is_found_at_its_code_counter_count() {
        let countries = ["China (1.33 billion)", "India (2.1 billion)", "Russia (2.1 billion)", "Brazil (2.1 billion)"];
        // Four distinct items, then the same four in no fixed order.
        let order = [0, 1, 2, 3, 2, 0, 3, 1];
        let list =
            |n: usize| -> String { (1..=n).map(|i| format!("{i}. {}\n", countries[order[(i - 1) % 8]])).collect() };
        let text = list(60);
        let findings = crate::scan_units(&units(&text), &crate::DEFAULT_RULES);
        let [found] = &findings[..] else { panic!("one finding: {findings:?}") };
        assert_eq!(found.rule, crate::Rule::TemplateLines);
        // From the first item that comes back (the fifth), found at the streak's 25th line.
        let before = text[..found.detected_at as usize].lines().count();
        assert_eq!((found.start, before), (text.find("5. ").unwrap() as u64, 4 + 25));
        assert!(crate::scan_units(&units(&list(4 + 24)), &crate::DEFAULT_RULES).is_empty(), "24 lines of the streak");
    }

    #[test]
    fn records_table_rows_and_numbers_that_happen_to_count_are_no_counted_list() {
        let cities = ["Paris", "Lyon", "Nice"];
        let found = |text: String| !crate::scan_units(&units(&text), &crate::DEFAULT_RULES).is_empty();
        let row =
            |n: usize, temp: usize| format!("{{\"id\": {n}, \"city\": \"{}\", \"temp\": {temp}}},\n", cities[n % 3]);
        assert!(found((1..80).map(|n| row(n, 20)).collect()), "records that come back as they were");
        assert!(!found((1..80).map(|n| row(n, 20 + n % 7)).collect()), "records whose values change");
        // Fewer rows than the counter rule needs of data (64).
        let table: String = (1..60).map(|n| format!("| option.{n} | {} |\n", n % 3 == 0)).collect();
        assert!(!found(table), "a table's rows are data");
        let name = |a: u8| format!("{}{}", char::from(b'a' + a / 26), char::from(b'a' + a % 26));
        let sql: String = (0..40)
            .map(|a| {
                format!("CREATE FUNCTION plus_{}()\n IMMUTABLE PARALLEL SAFE STRICT COST 1\nRETURN $2 + $1;\n", name(a))
            })
            .collect();
        assert!(!found(sql), "`$2` after `COST 1` counts on from no count");
    }

    #[test]
    fn what_is_prose() {
        assert!(is_prose(&units("3. Check the server's response to identify the type.")));
        assert!(is_prose(&units("<strong>1. 東京で一日旅</strong>")));
        assert!(!is_prose(&units("Classifier: Programming Language :: Python :: 3.8")));
        assert!(!is_prose(&units("self.assertEqual(value, 12)")));
        assert!(!is_prose(&units("camelCase fooBar and more")), "names are no words");
        assert!(is_prose(&units("- I saw a dog at 12:30.")));
        assert!(!is_prose(&units("name: value here")), "`name:` mid-line is a field: two words");
    }
}
