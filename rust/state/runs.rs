//! Run tracking: a period that holds at a sample is traced back to where its run starts, and
//! followed unit by unit (a [`Tracker`]) while it can still reach its rule, until it breaks.

use super::{Candidate, Core, K};
use crate::classes::{BlockClass, PACKED_CONTEXT};
use crate::finding::{Finding, Rule};
use crate::lanes::Unit;

/// Follows one periodic run once sampling has seen it.
#[derive(Clone, Debug)]
pub(super) struct Tracker {
    pub(super) period: u64,
    pub(super) start: u64,
    /// The span at which to look at the run again: first the least any block of this period
    /// needs, then (once `settled`) what this run's block needs.
    need: u64,
    /// Whether the block was checked (primitive) and `need` is its own.
    settled: bool,
    fired: bool,
    /// The run starts inside an earlier finding's claim, so it never counts: it is followed only
    /// so that the periods it repeats are dismissed at once instead of each being traced back
    /// over the whole run at every sample.
    claimed: bool,
    /// Every unit before this one repeats the unit `period` before it; the unit here does not,
    /// unless it is not appended yet.
    holds_to: u64,
}

impl<T: Unit> Core<T> {
    /// The first unit at or after `x` where tracker `i` breaks or reaches its `need`.
    pub(super) fn tracker_event(&mut self, i: usize, x: u64, end: u64) -> u64 {
        let t = &self.trackers[i];
        let holds_to = self.window.first_break(t.period, t.holds_to.max(x), end);
        let t = &mut self.trackers[i];
        t.holds_to = holds_to;
        if t.fired || t.claimed {
            return holds_to;
        }
        let reaches_need = t.start + t.need - 1;
        if reaches_need < x {
            holds_to
        } else {
            holds_to.min(reaches_need)
        }
    }

    pub(super) fn follow_trackers(&mut self, x: u64, unit: u32) {
        let mut i = 0;
        while i < self.trackers.len() {
            let t = &self.trackers[i];
            let keep = if self.window.at(x - t.period) != unit {
                if t.fired {
                    self.claim.run_broke_at(x);
                }
                false
            } else if t.fired {
                self.claim.run_held_at(x);
                true
            } else {
                t.claimed || x + 1 - t.start != t.need || self.settle(i, x)
            };
            if keep {
                i += 1;
            } else {
                self.trackers.swap_remove(i);
            }
        }
    }

    /// Tracker `i` reached its `need` at `x`. The first time, its block is looked at: a block
    /// that is a power of a shorter one is dropped (the shorter period reports it), any other
    /// gets the span its class needs. Reaching that span makes a candidate. Returns whether to
    /// keep following the run.
    fn settle(&mut self, i: usize, x: u64) -> bool {
        let (period, start) = (self.trackers[i].period, self.trackers[i].start);
        if !self.trackers[i].settled {
            if !self.is_primitive(start, period) {
                return false;
            }
            // The first copy, and what comes before the run as far as the window holds it.
            let oldest = (x + 1).saturating_sub(self.window.len() as u64);
            let before = self.window.units(start.saturating_sub(PACKED_CONTEXT as u64).max(oldest), start);
            let block = self.window.units(start, start + period);
            let need = self.rules.run_span(&block, BlockClass::of_run(&block, &before));
            let tracker = &mut self.trackers[i];
            tracker.settled = true;
            tracker.need = need;
            if need > x + 1 - start {
                return true;
            }
        }
        let finding = self.periodic_finding(&self.trackers[i], x);
        self.candidates.push(Candidate { finding, tracker: Some(i) });
        true
    }

    /// The last 16 units up to `x` repeat those `p` before them: follow the run if it can count.
    /// Returns whether a tracker started.
    pub(super) fn try_track(&mut self, x: u64, p: u64) -> bool {
        // A followed run of a divisor `q` of `p` repeats its block through `x`, so every unit from
        // `t.start + p` on repeats the one `p` back, and the unit before, equal to the one at
        // `t.start + q - 1` where the q-run's repeats begin, does not: the p-run starts at
        // `t.start`, its block a power of the shorter one. Nothing to trace.
        if self.trackers.iter().any(|t| p % t.period == 0 && x >= t.start + p) {
            return false;
        }
        // Trace the run back: `first` is its first unit equal to the one `p` before it.
        let oldest = (x + 1).saturating_sub(self.window.len() as u64);
        let floor = p.max(oldest + p);
        let first = self.window.run_start(p, floor, x + 1 - K);
        if first == floor && first != p {
            // The run is older than the window, so it was followed (or ruled out) already.
            return false;
        }
        let start = first - p;
        if self.claim.covers(first) {
            // The run started inside an earlier finding and never counts. It is followed all the
            // same, so that the periods it repeats are dismissed above without tracing (a run of
            // one unit right after a loop was traced back for every period at every sample).
            self.trackers.push(Tracker {
                period: p,
                start,
                need: 0,
                settled: true,
                fired: false,
                claimed: true,
                holds_to: x + 1,
            });
            return true;
        }
        if self.trackers.iter().any(|t| t.start <= start && p % t.period == 0) {
            // A shorter period covers this block: it is a power of a shorter one.
            return false;
        }
        let need = self.plan.least[p as usize];
        if x + 1 - start > need {
            // Sampling sees every run before it can count: one past that was judged already
            // (its block is a power of a shorter one).
            return false;
        }
        // A run that, if it goes on, is sampled again before it can count is left to that
        // sample: most runs break first, and are never followed at all.
        if x + self.plan.spacing(p) < start + need {
            return false;
        }
        self.trackers.push(Tracker {
            period: p,
            start,
            need,
            settled: false,
            fired: false,
            claimed: false,
            holds_to: x + 1,
        });
        if x + 1 - start == need && !self.settle(self.trackers.len() - 1, x) {
            self.trackers.pop();
            return false;
        }
        true
    }

    /// Whether `units[start..start + p]` is not a power of a shorter block.
    fn is_primitive(&self, start: u64, p: u64) -> bool {
        let mut rest = p;
        let mut factor = 2;
        while rest > 1 {
            if factor * factor > rest {
                factor = rest;
            }
            if rest % factor == 0 {
                let q = p / factor;
                if self.window.first_break(q, start + q, start + p) == start + p {
                    return false;
                }
                while rest % factor == 0 {
                    rest /= factor;
                }
            }
            factor += 1;
        }
        true
    }

    fn periodic_finding(&self, t: &Tracker, x: u64) -> Finding {
        let rule = if t.period <= u64::from(self.rules.max_period) { Rule::PeriodicRun } else { Rule::LongBlock };
        // The block is read from the run's latest full copy (the first may have left the window).
        let copies = (x + 1 - t.start) / t.period;
        let copy_start = t.start + (copies - 1) * t.period;
        Finding {
            rule,
            period: t.period,
            block: self.window.units(copy_start, copy_start + t.period),
            start: t.start,
            repeats: copies,
            detected_at: x + 1,
            end: x + 1,
        }
    }

    /// Stops following the runs an earlier finding now claims (their first copy ends before the
    /// claim does), keeping the run that fired.
    pub(super) fn drop_claimed_runs(&mut self) {
        let claim_end = self.claim.end();
        self.trackers.retain(|t| t.fired || t.start + t.period >= claim_end);
    }

    /// Tracker `i` fired: it alone is followed from now on, until it breaks.
    pub(super) fn follow_fired_run(&mut self, i: usize) {
        let mut kept = self.trackers.swap_remove(i);
        kept.fired = true;
        self.trackers.clear();
        self.trackers.push(kept);
    }
}
