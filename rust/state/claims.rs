//! What earlier findings cover. A degenerate region is reported once: a later finding counts
//! only if its anchor (see `Finding::anchor`) is at or after the claim's end. The claim grows
//! while the repetition that fired goes on (a periodic run unit by unit, a line streak line by
//! line), so one loop is one finding however long it runs; a loop that breaks and resumes is a
//! new region.

use crate::finding::Rule;

/// The end of what earlier findings cover, and what is still extending it.
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct Claim {
    /// A later finding must have its anchor at or after this offset.
    end: u64,
    /// The periodic run that fired is still running: nothing new can be found until it breaks.
    run_running: bool,
    /// The line streaks that fired and still run, a bit per rule code: each line that
    /// continues one extends the claim. Several can run at once: a template streak passes over
    /// the lines with no number in which another rule's streak may fire.
    streaks: u8,
}

impl Claim {
    /// Whether `pos` is inside what an earlier finding covers.
    #[inline]
    pub fn covers(&self, pos: u64) -> bool {
        pos < self.end
    }

    /// The first offset no earlier finding covers.
    #[inline]
    pub fn end(&self) -> u64 {
        self.end
    }

    /// Whether the periodic run that fired is still running (sampling then waits for it to
    /// break).
    #[inline]
    pub fn run_running(&self) -> bool {
        self.run_running
    }

    /// Whether a line streak that fired still runs (its lines then matter to the claim).
    #[inline]
    pub fn streak_running(&self) -> bool {
        self.streaks != 0
    }

    /// A finding fired at unit `x`: everything up to it is covered.
    #[inline]
    pub fn fired_at(&mut self, x: u64) {
        self.end = x + 1;
    }

    /// The finding that fired is a periodic run, followed from now on.
    #[inline]
    pub fn run_fired(&mut self) {
        self.run_running = true;
    }

    /// The finding that fired is a line streak: no run that fired before is followed any more.
    #[inline]
    pub fn streak_fired(&mut self, rule: Rule) {
        self.run_running = false;
        self.streaks |= 1 << rule.code();
    }

    /// The run that fired still repeats at unit `x`.
    #[inline]
    pub fn run_held_at(&mut self, x: u64) {
        self.end = x + 1;
    }

    /// The run that fired broke at unit `x` (which does not repeat).
    #[inline]
    pub fn run_broke_at(&mut self, x: u64) {
        self.run_running = false;
        self.end = x;
    }

    /// Every unit before `end` has been worked through: a run that fired and still runs covers
    /// them all.
    #[inline]
    pub fn extend_to(&mut self, end: u64) {
        if self.run_running {
            self.end = end;
        }
    }

    /// A line ending at the newline `x` continued the streak of `rule`: if that streak fired,
    /// the claim covers the line.
    #[inline]
    pub fn streak_continued_at(&mut self, x: u64, rule: Rule) {
        if self.streaks & (1 << rule.code()) != 0 {
            self.end = x + 1;
        }
    }

    /// The streak of `rule` is over: if it fired, it no longer extends the claim.
    #[inline]
    pub fn streak_ended(&mut self, rule: Rule) {
        self.streaks &= !(1 << rule.code());
    }
}
