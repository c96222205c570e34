//! The identical-lines rule, one unit at a time. Each line is reduced to a 64-bit hash of its
//! content (trailing whitespace ignored) as it streams; two lines with equal hash and length are
//! then compared unit by unit when both are still in the window, so equality is exact for every
//! line shorter than the window and a 64-bit hash match beyond it.

use crate::rules::{is_whitespace, KindCounts, Rules};
use crate::window::Window;

const NEWLINE: u32 = '\n' as u32;
/// Odd multiplier of the line hash (from splitmix64).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;

/// What the end of a line did to the streak of identical lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEvent {
    /// The line repeats the streak's line (after the streak reached its rule, or before).
    Continued,
    /// The line differs from the streak's: a new streak of one line starts.
    NewStreak,
    /// The streak just reached the number of lines its rule needs.
    Reached { start: u64, line_start: u64, period: u64, repeats: u64 },
}

/// A line so far. The hash runs over every unit; `content_*` is its value at the last visible
/// unit, so trailing whitespace drops out without being kept aside.
#[derive(Clone, Copy, Debug, Default)]
struct Line {
    hash: u64,
    len: u64,
    content_hash: u64,
    content_len: u64,
    /// Whitespace since the last visible unit: counted into `kind` once a visible unit follows.
    pending_whitespace: u64,
    kind: KindCounts,
}

impl Line {
    #[inline]
    fn push(&mut self, unit: u32) {
        self.hash = (self.hash ^ (u64::from(unit) + 1)).wrapping_mul(MIX);
        self.len += 1;
        if is_whitespace(unit) {
            self.pending_whitespace += 1;
            return;
        }
        self.content_hash = self.hash;
        self.content_len = self.len;
        self.kind.add_whitespace(std::mem::take(&mut self.pending_whitespace));
        self.kind.add(unit);
    }
}

#[derive(Clone, Debug)]
pub struct Lines {
    rules: Rules,
    current: Line,
    current_start: u64,
    /// The streak: its line's (hash, len), where its first and its latest line start, how many.
    streak_key: Option<(u64, u64)>,
    streak_start: u64,
    streak_last_start: u64,
    streak_count: u64,
}

impl Lines {
    pub fn new(rules: &Rules) -> Lines {
        Lines {
            rules: *rules,
            current: Line::default(),
            current_start: 0,
            streak_key: None,
            streak_start: 0,
            streak_last_start: 0,
            streak_count: 0,
        }
    }

    /// Takes unit `x` (already pushed to `window`); reports what a completed line did to the
    /// streak.
    #[inline]
    pub fn push(&mut self, x: u64, unit: u32, window: &Window) -> Option<LineEvent> {
        if unit != NEWLINE {
            self.current.push(unit);
            return None;
        }
        let line = std::mem::take(&mut self.current);
        let line_start = std::mem::replace(&mut self.current_start, x + 1);
        if line.content_len == 0 {
            // Blank lines do not break a streak.
            return None;
        }
        let key = (line.content_hash, line.content_len);
        if self.streak_key != Some(key) || !same_in_window(window, x, self.streak_last_start, line_start, line.content_len) {
            self.streak_key = Some(key);
            self.streak_start = line_start;
            self.streak_last_start = line_start;
            self.streak_count = 1;
            return Some(LineEvent::NewStreak);
        }
        self.streak_count += 1;
        self.streak_last_start = line_start;
        if self.streak_count == u64::from(self.rules.required_lines(line.kind.kind())) {
            return Some(LineEvent::Reached {
                start: self.streak_start,
                line_start,
                period: line.content_len,
                repeats: self.streak_count,
            });
        }
        Some(LineEvent::Continued)
    }
}

/// Whether the `len` units from `a` equal those from `b` (`a < b`), where the window (newest
/// unit `x`) still holds `a`; lines beyond the window are taken as equal on their hash.
fn same_in_window(window: &Window, x: u64, a: u64, b: u64, len: u64) -> bool {
    if x - a >= window.len() as u64 {
        return true;
    }
    (0..len).all(|i| window.back(x - a - i) == window.back(x - b - i))
}
