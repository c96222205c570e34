//! The identical-lines rule, one unit at a time: each line is reduced to a hash of its content
//! (trailing whitespace ignored) as it streams, so memory does not grow with line length.

use crate::rules::{is_whitespace, KindCounts, Rules};

const NEWLINE: u32 = '\n' as u32;
/// Lines are hashed modulo the Mersenne prime 2^61 - 1 (with the length, a collision needs two
/// different lines of equal length and equal 61-bit hash).
const MODULUS: u64 = (1 << 61) - 1;
const BASE: u64 = 0x1F35_7B2D_9A4C_3E11 % MODULUS;

fn mul_mod(a: u64, b: u64) -> u64 {
    let product = u128::from(a) * u128::from(b);
    let folded = (product & u128::from(MODULUS)) + (product >> 61);
    let folded = folded as u64;
    if folded >= MODULUS { folded - MODULUS } else { folded }
}

fn add_mod(a: u64, b: u64) -> u64 {
    let sum = a + b;
    if sum >= MODULUS { sum - MODULUS } else { sum }
}

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

/// A line's content so far: everything up to its last visible unit, plus the whitespace after it
/// kept aside until a visible unit shows it was not trailing.
#[derive(Clone, Copy, Debug)]
struct LineHash {
    hash: u64,
    len: u64,
    pending_hash: u64,
    pending_pow: u64,
    pending_len: u64,
    kind: KindCounts,
}

impl Default for LineHash {
    fn default() -> Self {
        LineHash { hash: 0, len: 0, pending_hash: 0, pending_pow: 1, pending_len: 0, kind: KindCounts::default() }
    }
}

impl LineHash {
    fn push(&mut self, unit: u32) {
        let value = u64::from(unit) + 1;
        if is_whitespace(unit) {
            self.pending_hash = add_mod(mul_mod(self.pending_hash, BASE), value);
            self.pending_pow = mul_mod(self.pending_pow, BASE);
            self.pending_len += 1;
            return;
        }
        if self.pending_len > 0 {
            self.hash = add_mod(mul_mod(self.hash, self.pending_pow), self.pending_hash);
            self.len += self.pending_len;
            self.kind.add_whitespace(self.pending_len);
            self.pending_hash = 0;
            self.pending_pow = 1;
            self.pending_len = 0;
        }
        self.hash = add_mod(mul_mod(self.hash, BASE), value);
        self.len += 1;
        self.kind.add(unit);
    }
}

#[derive(Clone, Debug)]
pub struct Lines {
    rules: Rules,
    current: LineHash,
    current_start: u64,
    /// The streak: its line's (hash, len), where its first line starts, how many lines.
    streak_key: Option<(u64, u64)>,
    streak_start: u64,
    streak_count: u64,
}

impl Lines {
    pub fn new(rules: &Rules) -> Lines {
        Lines {
            rules: *rules,
            current: LineHash::default(),
            current_start: 0,
            streak_key: None,
            streak_start: 0,
            streak_count: 0,
        }
    }

    /// Takes unit `x`; reports what a completed line did to the streak.
    #[inline]
    pub fn push(&mut self, x: u64, unit: u32) -> Option<LineEvent> {
        if unit != NEWLINE {
            self.current.push(unit);
            return None;
        }
        let line = std::mem::take(&mut self.current);
        let line_start = std::mem::replace(&mut self.current_start, x + 1);
        if line.len == 0 {
            // Blank lines do not break a streak.
            return None;
        }
        let key = (line.hash, line.len);
        if self.streak_key != Some(key) {
            self.streak_key = Some(key);
            self.streak_start = line_start;
            self.streak_count = 1;
            return Some(LineEvent::NewStreak);
        }
        self.streak_count += 1;
        if self.streak_count == u64::from(self.rules.required_lines(line.kind.kind())) {
            return Some(LineEvent::Reached {
                start: self.streak_start,
                line_start,
                period: line.len,
                repeats: self.streak_count,
            });
        }
        Some(LineEvent::Continued)
    }
}
