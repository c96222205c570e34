//! Lines as the line rules (identical lines, counter lines) read them, one line end at a time.
//! Units between line ends cost nothing here: at a newline the line's content (trailing
//! whitespace dropped) is read back from the window. A line whose start would leave the window
//! before its end arrives is folded into a keyed hash as it leaves; the rules compare such lines
//! on hash and length.
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
use crate::lanes::Unit;
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

#[derive(Clone, Debug, Default)]
pub struct LineReader {
    current_start: u64,
    /// The part of the current line that already left the window (empty for most lines).
    current: Folded,
}

impl LineReader {
    /// Where the line being read starts: after the latest newline read.
    #[inline(always)]
    pub fn current_start(&self) -> u64 {
        self.current_start
    }

    /// Before the window's units up to `leaving` leave it: folds the current line's part among
    /// them.
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        let folded_to = self.current_start + self.current.len;
        if folded_to < leaving {
            self.current.extend(window, folded_to, leaving);
        }
    }

    /// Unit `x` of `window` is a newline: the line it ends (a blank line has no content, and
    /// breaks no streak). `before` is the unit before it, where the caller has it at hand
    /// (most lines end in a visible unit, so the window is not read). Inlined into the loop over
    /// a piece's newlines: most lines are held whole.
    #[inline(always)]
    pub fn on_newline<T: Unit>(&mut self, x: u64, before: Option<u32>, window: &Window<T>) -> Line {
        let start = std::mem::replace(&mut self.current_start, x + 1);
        if self.current.len > 0 {
            self.folded_line(start, x, window)
        } else {
            let mut end = x;
            let mut unit = before;
            let mut last = 0;
            while end > start {
                last = unit.take().unwrap_or_else(|| window.at(end - 1));
                if !is_whitespace(last) {
                    break;
                }
                end -= 1;
            }
            Line { start, content_len: end - start, hash: None, class: None, last }
        }
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
            last: 0,
        }
    }
}

/// A non-blank line as the line rules read it: where it starts, the length of its content
/// (trailing whitespace dropped), its hash and class if part of it had to leave the window, and
/// its last visible unit (0 for a line that had to leave it), which the counter rule compares.
#[derive(Clone, Copy, Debug)]
pub struct Line {
    pub start: u64,
    pub content_len: u64,
    pub hash: Option<u64>,
    pub class: Option<BlockClass>,
    pub last: u32,
}

/// The hash of a line's content held in the window (as [`Folded`] would give).
pub fn hash_of<T: Unit>(window: &Window<T>, start: u64, content_len: u64) -> u64 {
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
