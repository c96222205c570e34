//! The identical-lines rule, one line end at a time. Units between line ends cost nothing here:
//! at a newline the line's content (trailing whitespace dropped) is read back from the window and
//! compared with the streak's line. A line whose start would leave the window before its end
//! arrives is folded into a keyed hash as it leaves, and so is a streak line about to leave; two
//! lines are then compared on hash and length. Equality is exact while both lines are held.
//!
//! The hash is keyed, so that output cannot be crafted to make two different lines look the
//! same (an unkeyed hash let a birthday search over ~2^16 ids force a false `identical_lines`
//! stop). A line's units `u` are split into four lanes by position, and lane `l` is the
//! polynomial of its `u + 1` evaluated at a point `k_l`, modulo the prime 2^61 - 1; the hash is
//! the sum of the lanes. The points are drawn at random once per process ([`line_key`]) and never
//! leave it, so every detector and clone hashes alike (findings stay independent of chunking).
//!
//! What remains probabilistic: two different lines of `n` units (of equal length, as only those
//! are compared) differ as polynomials of degree below `n / 4`, so they share a hash for fewer
//! than `n / 4` of the 2^60 values each point is drawn from: whatever the text, a pair is taken
//! for equal with probability below `n / 2^62` (under 2^-42 for lines of a million units), and
//! choosing a pair that collides needs the key.

use std::hash::BuildHasher;
use std::sync::OnceLock;

use crate::classes::{is_whitespace, BlockClass, ClassCounts};
use crate::counters::{CounterEvent, Counters};
use crate::lanes::Unit;
use crate::rules::Rules;
use crate::window::Window;

/// The prime modulus of the line hash.
const P: u64 = (1 << 61) - 1;

/// Lanes of the line hash: independent chains of multiplies, so that a long line folds at the
/// multiplier's throughput rather than its latency.
const LINE_LANES: usize = 4;

/// The point each lane's polynomial is evaluated at: drawn once per process from std's
/// `RandomState` (seeded from the operating system), in `2..2^60` (below `P / 2`, so that one
/// folding step per unit keeps a lane below 2^64).
fn line_key() -> &'static [u64; LINE_LANES] {
    static KEY: OnceLock<[u64; LINE_LANES]> = OnceLock::new();
    KEY.get_or_init(|| {
        let random = std::collections::hash_map::RandomState::new();
        std::array::from_fn(|lane| 2 + random.hash_one(lane) % ((1 << 60) - 2))
    })
}

/// `x` modulo `P`, up to multiples of `P`: `x & P` plus `x >> 61`, as `2^61 = 1` modulo `P`.
#[inline(always)]
fn reduce(x: u128) -> u64 {
    (x as u64 & P) + (x >> 61) as u64
}

/// One unit into a lane: `lane * k + unit + 1`, modulo `P` up to multiples of it. A lane below
/// 2^64 times a point below 2^60 is below 2^124, which reduces to below 2^61 + 2^63, and adding
/// a unit keeps it below 2^64.
#[inline(always)]
fn fold(lane: u64, k: u64, unit: u32) -> u64 {
    reduce(u128::from(lane) * u128::from(k)) + u64::from(unit) + 1
}

/// What the end of a line did to the streak of identical lines.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LineEvent {
    /// The line repeats the streak's line (after the streak reached its rule, or before).
    Continued,
    /// The line differs from the streak's: a new streak of one line starts.
    NewStreak,
    /// The streak just reached the number of lines its rule needs.
    Reached { start: u64, line_start: u64, period: u64, copies: u64 },
}

/// What the end of a non-blank line did to the streak of identical lines, and to the streak of
/// counter lines (`None` when no counter streak was running and none reached its rule).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LineEvents {
    pub identical: LineEvent,
    pub counter: Option<CounterEvent>,
}

impl LineEvents {
    /// Whether a streak reached its rule at this line.
    pub fn reached(&self) -> bool {
        matches!(self.identical, LineEvent::Reached { .. }) || matches!(self.counter, Some(CounterEvent::Reached))
    }
}

/// A line folded a slice at a time. `content_*` is its value at the last visible unit, so
/// trailing whitespace drops out without being kept aside.
#[derive(Clone, Copy, Debug, Default)]
struct Folded {
    /// Unit `i` of the line is folded into lane `i % LINE_LANES`.
    lanes: [u64; LINE_LANES],
    len: u64,
    content_hash: u64,
    content_len: u64,
    /// Whitespace since the last visible unit: counted into `class_counts` once a visible unit follows.
    pending_whitespace: u64,
    class_counts: ClassCounts,
}

impl Folded {
    fn extend<T: Unit>(&mut self, window: &Window<T>, from: u64, to: u64) {
        let (older, newer) = window.slices(from, to);
        self.extend_slice(older);
        self.extend_slice(newer);
    }

    fn extend_slice<T: Unit>(&mut self, units: &[T]) {
        let Some(last_visible) = units.iter().rposition(|&unit| !is_whitespace(unit.into())) else {
            self.hash_units(units);
            self.pending_whitespace += units.len() as u64;
            return;
        };
        let (content, trailing) = units.split_at(last_visible + 1);
        self.class_counts.add_whitespace(std::mem::take(&mut self.pending_whitespace));
        self.class_counts.add_all(content);
        self.hash_units(content);
        (self.content_hash, self.content_len) = (self.hash(), self.len);
        self.hash_units(trailing);
        self.pending_whitespace = trailing.len() as u64;
    }

    fn hash_units<T: Unit>(&mut self, units: &[T]) {
        let key = line_key();
        let mut lanes = self.lanes;
        // Up to the next multiple of LINE_LANES units, then LINE_LANES at a time from lane 0.
        let lanes_n = LINE_LANES as u64;
        let (head, rest) = units.split_at(((lanes_n - self.len % lanes_n) % lanes_n).min(units.len() as u64) as usize);
        for (i, &unit) in head.iter().enumerate() {
            let lane = (self.len as usize + i) % LINE_LANES;
            lanes[lane] = fold(lanes[lane], key[lane], unit.into());
        }
        let mut quads = rest.chunks_exact(LINE_LANES);
        for quad in quads.by_ref() {
            lanes = std::array::from_fn(|lane| fold(lanes[lane], key[lane], quad[lane].into()));
        }
        for (lane, &unit) in quads.remainder().iter().enumerate() {
            lanes[lane] = fold(lanes[lane], key[lane], unit.into());
        }
        self.lanes = lanes;
        self.len += units.len() as u64;
    }

    /// The hash of the units folded so far: the sum of the lanes modulo `P`, in `0..P`.
    fn hash(&self) -> u64 {
        let sum: u128 = self.lanes.iter().map(|&lane| u128::from(lane)).sum();
        // Below 2^66, so it reduces to below 2^61 + 8: one subtraction of `P` is left.
        let below = reduce(sum);
        if below >= P {
            below - P
        } else {
            below
        }
    }
}

/// The run of identical lines the latest lines belong to.
#[derive(Clone, Copy, Debug)]
struct Streak {
    /// Where its first and its latest line start.
    start: u64,
    last_start: u64,
    content_len: u64,
    /// The line's hash, once a copy of it had to leave the window.
    hash: Option<u64>,
    /// The line's class, once the streak is long enough to ask.
    class: Option<BlockClass>,
    count: u64,
}

#[derive(Clone, Debug)]
pub struct Lines {
    rules: Rules,
    current_start: u64,
    /// The part of the current line that already left the window (empty for most lines).
    current: Folded,
    streak: Option<Streak>,
    counters: Counters,
}

impl Lines {
    pub fn new(rules: &Rules) -> Lines {
        Lines {
            rules: *rules,
            current_start: 0,
            current: Folded::default(),
            streak: None,
            counters: Counters::new(rules),
        }
    }

    /// The streak of counter lines (for the first line of one that reached its rule).
    pub fn counters(&self) -> &Counters {
        &self.counters
    }

    /// Before `n` units are appended to `window`: folds what they would push out of it.
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, n: usize) {
        let leaving = window.oldest_after(n);
        let folded_to = self.current_start + self.current.len;
        if folded_to < leaving {
            self.current.extend(window, folded_to, leaving);
        }
        self.counters.before_append(window, leaving);
        if let Some(streak) = &mut self.streak {
            if streak.hash.is_none() && streak.last_start < leaving {
                streak.hash = Some(hash_of(window, streak.last_start, streak.content_len));
            }
        }
    }

    /// Unit `x` of `window` is a newline: reports what the line it ends did to the streaks.
    /// `before` is the unit before it, where the caller has it at hand (most lines end in a
    /// visible unit, so the window is not read). Inlined into the loop over a piece's newlines:
    /// most lines are held whole and differ in length from the streak's, and those are decided
    /// here without a call.
    #[inline(always)]
    pub fn on_newline<T: Unit>(&mut self, x: u64, before: Option<u32>, window: &Window<T>) -> Option<LineEvents> {
        let start = std::mem::replace(&mut self.current_start, x + 1);
        // The line's last unit (trailing whitespace dropped), which the counter rule compares.
        let mut last = 0;
        let line = if self.current.len > 0 {
            self.folded_line(start, x, window)
        } else {
            let mut end = x;
            let mut unit = before;
            while end > start {
                last = unit.take().unwrap_or_else(|| window.at(end - 1));
                if !is_whitespace(last) {
                    break;
                }
                end -= 1;
            }
            Line { start, content_len: end - start, hash: None, class: None }
        };
        if line.content_len == 0 {
            // Blank lines do not break a streak.
            return None;
        }
        let identical = match self.streak {
            Some(streak) if streak.content_len == line.content_len => self.on_same_length(streak, line, window),
            _ => self.new_streak(line),
        };
        let repeats_previous = identical != LineEvent::NewStreak;
        let counter = self.counters.on_line(start, line.content_len, last, x, repeats_previous, window);
        Some(LineEvents { identical, counter })
    }

    /// The line starting at `start`, part of which left the window, ends at the newline `x`.
    #[inline(never)]
    fn folded_line<T: Unit>(&mut self, start: u64, x: u64, window: &Window<T>) -> Line {
        let mut folded = std::mem::take(&mut self.current);
        folded.extend(window, start + folded.len, x);
        Line {
            start,
            content_len: folded.content_len,
            hash: Some(folded.content_hash),
            class: Some(folded.class_counts.line_class()),
        }
    }

    #[inline(always)]
    fn new_streak(&mut self, line: Line) -> LineEvent {
        let Line { start, content_len, hash, class } = line;
        self.streak = Some(Streak { start, last_start: start, content_len, hash, class, count: 1 });
        LineEvent::NewStreak
    }

    /// The line is as long as the streak's: whether it repeats it, and what that does. Inlined:
    /// in a loop of identical lines every line comes here (a call cost 7% there).
    #[inline(always)]
    fn on_same_length<T: Unit>(&mut self, streak: Streak, line: Line, window: &Window<T>) -> LineEvent {
        let Line { start: line_start, content_len, hash, class } = line;
        let same = match (streak.hash, hash) {
            (None, None) => {
                let apart = line_start - streak.last_start;
                window.first_break(apart, line_start, line_start + content_len) == line_start + content_len
            }
            (known, new) => {
                let hash_at = |start| hash_of(window, start, content_len);
                known.unwrap_or_else(|| hash_at(streak.last_start)) == new.unwrap_or_else(|| hash_at(line_start))
            }
        };
        let Some(streak) = self.streak.as_mut().filter(|_| same) else {
            return self.new_streak(line);
        };
        streak.count += 1;
        streak.last_start = line_start;
        streak.hash = streak.hash.or(hash);
        streak.class = streak.class.or(class);
        let fewest = self.rules.min_lines.min(self.rules.code_min_lines);
        if streak.count < u64::from(fewest) {
            return LineEvent::Continued;
        }
        let class = *streak.class.get_or_insert_with(|| {
            let mut counts = ClassCounts::default();
            let (older, newer) = window.slices(line_start, line_start + content_len);
            counts.add_all(older);
            counts.add_all(newer);
            counts.line_class()
        });
        if streak.count == self.rules.required_lines(class, content_len) {
            return LineEvent::Reached { start: streak.start, line_start, period: content_len, copies: streak.count };
        }
        LineEvent::Continued
    }
}

/// A line as the streak compares it: where it starts, the length of its content (trailing
/// whitespace dropped), and its hash and class if part of it had to leave the window.
#[derive(Clone, Copy, Debug)]
struct Line {
    start: u64,
    content_len: u64,
    hash: Option<u64>,
    class: Option<BlockClass>,
}

/// The hash of a line's content held in the window (as [`Folded`] would give).
fn hash_of<T: Unit>(window: &Window<T>, start: u64, content_len: u64) -> u64 {
    let mut line = Folded::default();
    line.extend(window, start, start + content_len);
    line.content_hash
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line folded in slices of any sizes hashes as when folded at once, and its content (the
    /// line without trailing whitespace) hashes as the content alone.
    #[test]
    fn folding_does_not_depend_on_where_slices_split() {
        let line: Vec<u8> = b"  let folded = lanes.iter().fold(len, mix); // x  ".to_vec();
        let content_len = line.len() - 2;
        let mut whole = Folded::default();
        whole.extend_slice(&line);
        let mut content = Folded::default();
        content.extend_slice(&line[..content_len]);
        assert_eq!((whole.content_hash, whole.content_len), (content.content_hash, content_len as u64));
        for a in 0..=line.len() {
            for b in a..=line.len() {
                let mut split = Folded::default();
                split.extend_slice(&line[..a]);
                split.extend_slice(&line[a..b]);
                split.extend_slice(&line[b..]);
                assert_eq!((split.hash(), split.len), (whole.hash(), whole.len), "split at {a}, {b}");
                assert_eq!((split.content_hash, split.content_len), (whole.content_hash, whole.content_len));
            }
        }
        let mut other = Folded::default();
        other.extend_slice(b"  let folded = lanes.iter().fold(len, mix); // y  ");
        assert_ne!(other.content_hash, whole.content_hash);
    }
}
