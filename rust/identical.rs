//! The identical-lines rule, one line end at a time, on the lines [`crate::lines::LineReader`]
//! reads: a line as long as the streak's is compared with it, read back from the window while
//! both are held (exact), else on the keyed hash of `crate::lines` (a streak line about to leave
//! the window is hashed as it leaves).

use crate::classes::{BlockClass, ClassCounts};
use crate::lanes::Unit;
use crate::lines::{hash_of, Line};
use crate::rules::Rules;
use crate::window::Window;

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
pub struct IdenticalLines {
    rules: Rules,
    streak: Option<Streak>,
}

impl IdenticalLines {
    pub fn new(rules: &Rules) -> IdenticalLines {
        IdenticalLines { rules: *rules, streak: None }
    }

    /// Before the window's units up to `leaving` leave it: hashes the streak's line if its
    /// latest copy is among them.
    pub fn before_append<T: Unit>(&mut self, window: &Window<T>, leaving: u64) {
        if let Some(streak) = &mut self.streak {
            if streak.hash.is_none() && streak.last_start < leaving {
                streak.hash = Some(hash_of(window, streak.last_start, streak.content_len));
            }
        }
    }

    /// What a non-blank line does to the streak. Inlined into the loop over a piece's newlines:
    /// most lines differ in length from the streak's, and those are decided here without a call.
    #[inline(always)]
    pub fn on_line<T: Unit>(&mut self, line: Line, window: &Window<T>) -> LineEvent {
        match self.streak {
            Some(streak) if streak.content_len == line.content_len => self.on_same_length(streak, line, window),
            _ => self.new_streak(line),
        }
    }

    #[inline(always)]
    fn new_streak(&mut self, line: Line) -> LineEvent {
        let Line { start, content_len, hash, class, .. } = line;
        self.streak = Some(Streak { start, last_start: start, content_len, hash, class, count: 1 });
        LineEvent::NewStreak
    }

    /// The line is as long as the streak's: whether it repeats it, and what that does. Inlined:
    /// in a loop of identical lines every line comes here (a call cost 7% there).
    #[inline(always)]
    fn on_same_length<T: Unit>(&mut self, streak: Streak, line: Line, window: &Window<T>) -> LineEvent {
        let Line { start: line_start, content_len, hash, class, .. } = line;
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
