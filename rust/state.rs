//! The state of one stream over a window of units stored as `T`: units go in a piece at a
//! time, findings come out at the unit where their rule first holds, whatever the chunking.
//!
//! Periodic stretches are found without comparing every period at every unit. A run of period `p`
//! must hold for `least_required_span(p) - p` units before it can count, so it is enough to look
//! for it at sampled units, spaced less than that apart: at unit `x` the detector compares the
//! last 16 units with the 16 units `p` before them, for every `p` whose spacing divides `x`
//! (spacings are powers of two, so the periods due at `x` are one contiguous range, tested 32 at
//! a time with AVX2 or 16 without, most of them ruled out by three units). A run that holds for all
//! 16 units is traced back to where it starts; if it can still break before its next sample, that
//! sample looks again, otherwise a tracker follows it exactly until it breaks.
//!
//! Units are appended to the window a piece at a time and only the units where something can
//! happen are visited: sampled units, and where a followed run breaks or reaches its span (found
//! by comparing whole vectors). The piece's lines are worked through ahead of them, as nothing
//! else reads the line streak until it reaches its rule. Clean text costs about one vector compare per unit
//! whatever `max_long_period` is, and no run that can reach its rule is missed, so findings and
//! offsets are exact.

use std::sync::{Arc, OnceLock};

use crate::finding::{Finding, Rule};
#[cfg(target_arch = "x86_64")]
use crate::lanes::WIDE;
use crate::lanes::{Marks, Unit, LANES};
use crate::lines::{LineEvent, Lines};
use crate::plan::Plan;
use crate::rules::{BlockKind, Rules, DEFAULT_RULES, PACKED_CONTEXT, SAMPLE_UNITS};
use crate::window::{Slot, Window, PIECE};

const K: u64 = SAMPLE_UNITS as u64;
const _: () = assert!(SAMPLE_UNITS as usize == LANES, "a sample is one vector of lanes");

/// Everything the detector knows, over a window storing units as `T`.
#[derive(Clone, Debug)]
pub struct Core<T: Unit> {
    rules: Rules,
    plan: Arc<Plan>,
    window: Window<T>,
    trackers: Vec<Tracker>,
    lines: Lines,
    /// A later finding must have its anchor at or after this offset.
    claim_end: u64,
    /// A fired periodic tracker is still running: nothing new can be found until it breaks.
    claim_running: bool,
    /// The line streak that fired is the claim.
    line_claim: bool,
    first_finding: Option<Finding>,
    candidates: Vec<Candidate>,
}

/// Follows one periodic run once sampling has seen it.
#[derive(Clone, Debug)]
struct Tracker {
    period: u64,
    start: u64,
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

#[derive(Clone, Debug)]
struct Candidate {
    finding: Finding,
    /// Index into `trackers`, or `None` for the line streak.
    tracker: Option<usize>,
}

impl<T: Unit> Core<T> {
    pub fn new(rules: Rules) -> Core<T> {
        debug_assert!(rules.validate().is_ok());
        // Working out a plan takes ~100 us; the default rules' is worked out once.
        static DEFAULT_PLAN: OnceLock<Arc<Plan>> = OnceLock::new();
        let plan = if rules == DEFAULT_RULES {
            Arc::clone(DEFAULT_PLAN.get_or_init(|| Arc::new(Plan::new(&rules))))
        } else {
            Arc::new(Plan::new(&rules))
        };
        Core {
            rules,
            window: Window::new(plan.window_len),
            plan,
            trackers: Vec::new(),
            lines: Lines::new(&rules),
            claim_end: 0,
            claim_running: false,
            line_claim: false,
            first_finding: None,
            candidates: Vec::new(),
        }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Units fed so far.
    pub fn units_seen(&self) -> u64 {
        self.window.end()
    }

    pub fn finding(&self) -> Option<&Finding> {
        self.first_finding.as_ref()
    }

    pub fn window_len(&self) -> usize {
        self.window.len()
    }

    pub fn heap_bytes(&self) -> usize {
        self.window.heap_bytes()
            + self.trackers.capacity() * std::mem::size_of::<Tracker>()
            + self.candidates.capacity() * std::mem::size_of::<Candidate>()
    }

    /// Appends up to a piece of units to the window, then works through the units where
    /// something can happen: newlines whose line matters to the rest, sampled units, and where a
    /// followed run breaks or reaches its span. Nothing happens at the units in between, so
    /// skipping them is exact.
    pub fn feed_piece<S: Unit>(&mut self, piece: &[S], out: &mut Vec<Finding>) {
        self.window.allocate();
        self.lines.before_append(&self.window, piece.len());
        let first = self.window.end();
        self.window.append(piece);
        let end = self.window.end();
        let newline = S::store(u32::from(b'\n'));
        // A short loop, not `contains` (memchr for bytes, ~20 instructions to set up): only
        // pieces shorter than the sample spacing are looked at.
        #[allow(clippy::manual_contains)]
        let ends_a_line = || piece.iter().any(|&unit| unit == newline);
        if self.trackers.is_empty() && self.next_sample(first) >= end && !ends_a_line() {
            // Nothing can happen in this piece (most streamed deltas): no line ends, no sample
            // is due, no run is followed (so no claim runs either).
            return;
        }
        #[cfg(target_arch = "x86_64")]
        if avx2_build() {
            // SAFETY: the CPU has what `work_through_wide` is compiled for.
            return unsafe { self.work_through_wide(piece, first, out) };
        }
        // SAFETY: the narrow prefilter needs nothing of the CPU.
        unsafe { self.work_through::<S, Narrow>(piece, first, out) }
    }

    /// [`Core::work_through`] compiled for the CPUs that have AVX2 (and the bit instructions
    /// that came with it), sampling 32 periods per group.
    ///
    /// # Safety
    /// The CPU has AVX2, BMI1, BMI2, LZCNT and POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    unsafe fn work_through_wide<S: Unit>(&mut self, piece: &[S], first: u64, out: &mut Vec<Finding>) {
        self.work_through::<S, Wide>(piece, first, out)
    }

    /// Works through the units of `piece`, appended from `first` on, where something can happen.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn work_through<S: Unit, G: Prefilter>(&mut self, piece: &[S], first: u64, out: &mut Vec<Finding>) {
        let end = self.window.end();
        let mut newlines = Marks::<{ PIECE / 64 }>::new();
        newlines.list(piece, b'\n');
        let mut x = first;
        let (mut newline, mut line) = self.lines_ahead(piece, &newlines, first, x);
        loop {
            let mut event = newline;
            for i in 0..self.trackers.len() {
                event = event.min(self.tracker_event(i, x, end));
            }
            if let Some(after) = self.sample_until::<G>(x, event.min(end), out) {
                // A sample started following a run, or a finding fired: look again from there.
                x = after;
            } else if event < end {
                self.step::<G>(event, if event == newline { line.take() } else { None }, out);
                x = event + 1;
            } else {
                break;
            }
            if newline < x {
                (newline, line) = self.lines_ahead(piece, &newlines, first, x);
            }
        }
        if self.claim_running {
            self.claim_end = end;
        }
    }

    /// Works through the piece's newlines from `x` on while their lines change nothing but the
    /// streak of identical lines, which nothing else reads: up to the first whose event matters
    /// to the rest (a streak reaching its rule, or any line while a line finding is claimed).
    /// Returns that newline and its event, for the units before it to be worked through first,
    /// or `u64::MAX` if none does. Most newlines thus cost a list entry and a length compare.
    #[inline(always)]
    fn lines_ahead<S: Unit, const N: usize>(
        &mut self,
        piece: &[S],
        newlines: &Marks<N>,
        first: u64,
        x: u64,
    ) -> (u64, Option<LineEvent>) {
        for &i in newlines.from((x - first) as usize) {
            let at = first + u64::from(i);
            // The unit before the newline, read from the piece where it is in it.
            let before = usize::from(i).checked_sub(1).map(|i| piece[i].into());
            let event = self.lines.on_newline(at, before, &self.window);
            if event.is_some_and(|event| self.line_claim || matches!(event, LineEvent::Reached { .. })) {
                return (at, event);
            }
        }
        (u64::MAX, None)
    }

    /// Samples the sampled units in `x..until`, where nothing else happens. Returns the unit after
    /// the one where a tracker started or a finding fired, if one did.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn sample_until<G: Prefilter>(&mut self, x: u64, until: u64, out: &mut Vec<Finding>) -> Option<u64> {
        let mut at = self.next_sample(x);
        while at < until {
            let started = self.sample::<G>(at);
            if started || !self.candidates.is_empty() {
                if !self.candidates.is_empty() {
                    self.resolve(at, out);
                }
                if started || self.claim_running {
                    return Some(at + 1);
                }
            }
            at += self.plan.sample_spacing;
        }
        None
    }

    /// The first unit at or after `x` where sampling is due.
    fn next_sample(&self, x: u64) -> u64 {
        if self.claim_running {
            return u64::MAX;
        }
        // The spacing is a power of two.
        let below = self.plan.sample_spacing - 1;
        (x.max(K) + below) & !below
    }

    /// The first unit at or after `x` where tracker `i` breaks or reaches its `need`.
    fn tracker_event(&mut self, i: usize, x: u64, end: u64) -> u64 {
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

    /// Everything that happens at unit `x`, given the event of the line it ends if that matters.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn step<G: Prefilter>(&mut self, x: u64, line: Option<LineEvent>, out: &mut Vec<Finding>) {
        if !self.trackers.is_empty() {
            self.follow_trackers(x, self.window.at(x));
        }
        if let Some(event) = line {
            self.on_line(x, event);
        }
        // Samples `x` if it is due (and emits what that finds with the rest).
        self.sample_until::<G>(x, x + 1, out);
        if !self.candidates.is_empty() {
            self.resolve(x, out);
        }
    }

    fn follow_trackers(&mut self, x: u64, unit: u32) {
        let mut i = 0;
        while i < self.trackers.len() {
            let t = &self.trackers[i];
            let keep = if self.window.at(x - t.period) != unit {
                if t.fired {
                    self.claim_running = false;
                    self.claim_end = x;
                }
                false
            } else if t.fired {
                self.claim_end = x + 1;
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
    /// gets the span its kind needs. Reaching that span makes a candidate. Returns whether to
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
            let Some(kind) = BlockKind::of_run(&self.window.units(start, start + period), &before) else {
                // Packed data: followed, never counted, like a claimed run.
                self.trackers[i].claimed = true;
                return true;
            };
            let need = self.rules.required_span(period as u32, kind);
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

    fn on_line(&mut self, x: u64, event: LineEvent) {
        match event {
            LineEvent::Continued if self.line_claim => self.claim_end = x + 1,
            LineEvent::Continued => {}
            LineEvent::NewStreak => self.line_claim = false,
            LineEvent::Reached { start, line_start, period, repeats } => {
                // A line longer than the window is reported by the part of it the window holds
                // at this newline: the `len - 1` units before it, less the trailing whitespace.
                let content_end = line_start + period;
                let room = (self.window.len() as u64 - 1).saturating_sub(x - content_end);
                let block_len = period.min(room);
                let finding = Finding {
                    rule: Rule::IdenticalLines,
                    period,
                    block: self.window.units(content_end - block_len, content_end),
                    start,
                    repeats,
                    detected_at: x + 1,
                    end: x + 1,
                };
                self.candidates.push(Candidate { finding, tracker: None });
            }
        }
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

    /// Compares the last 16 units up to `x` with the 16 units `p` before them, for every period
    /// due at `x`. A group of periods (16, or 32 with AVX2) is first tested on three units, the
    /// newest, the middle and the oldest, joined into one mask: units apart rarely agree
    /// together, so almost every period goes there (on stdlib text two units let 1.2% of
    /// periods through, three 0.4%: 3% more instructions, ~20% less time, as the branch on
    /// survivors mispredicts less). Each period left is then tested on all 16 units with one
    /// compare. Returns whether a tracker started.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn sample<G: Prefilter>(&mut self, x: u64) -> bool {
        let due = u64::from(self.plan.due_upto[x.trailing_zeros().min(64) as usize]).min(x + 1 - K);
        let recent = *self.window.lanes(x + 1 - K);
        let targets = PROBES.map(|back| recent[LANES - 1 - back]);
        // Inside a stretch of one unit every period up to its length holds, its runs start
        // inside the stretch and their blocks are powers of the unit: `try_track` would dismiss
        // each, after tracing it back if no tracker follows the unit yet. They are left out (a
        // run of one unit inside a finding cost ~70 instructions per unit; with
        // `max_long_period` 65,535, 65,540 spaces took 4.7 s).
        let covered = if T::equal_to(&recent, recent[0]) == 0xFFFF { self.stretch_len(x) } else { 0 };
        let mut slot = self.window.slot(x - due);
        let mut started = false;
        // Whole groups of the periods above `covered`, then the rest of them: `left` are left,
        // and the group at `slot` starts at period `covered + left`.
        let mut left = due.saturating_sub(covered);
        while left >= G::WIDTH as u64 {
            started |= self.sample_group::<G>(x, slot, covered + left, u32::MAX, targets, &recent);
            slot = self.window.slot_after(slot, G::WIDTH);
            left -= G::WIDTH as u64;
        }
        if left > 0 {
            started |= self.sample_group::<G>(x, slot, covered + left, (1 << left) - 1, targets, &recent);
        }
        if covered > 0 {
            // Period 1 is the stretch's own run: sampled whatever covers the others.
            started |= self.sample_group::<G>(x, self.window.slot(x - 1), 1, 1, targets, &recent);
        }
        started
    }

    /// How far back from `x` the stretch of one unit ending at `x` goes, as far as the window
    /// holds it: the periods up to that hold at `x` only as powers of the unit. A followed run of
    /// one unit holds through every sample and knows where it starts; otherwise the stretch is
    /// traced back. Out of line: most samples end in more than one unit.
    #[cold]
    #[inline(never)]
    fn stretch_len(&self, x: u64) -> u64 {
        if let Some(run) = self.trackers.iter().find(|t| t.period == 1) {
            return x - run.start;
        }
        let oldest = (x + 1).saturating_sub(self.window.len() as u64);
        let first = self.window.run_start(1, oldest + 1, x + 1 - K);
        x - (first - 1)
    }

    /// One group of [`Core::sample`]: lane `i` of the group at `slot` stands for period
    /// `rest - i` (the unit it compares with the newest is in slot `slot + i`), if bit `i` of
    /// `due` is set. Returns whether a tracker started.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn sample_group<G: Prefilter>(
        &mut self,
        x: u64,
        slot: Slot,
        rest: u64,
        due: u32,
        targets: [T; 3],
        recent: &[T; LANES],
    ) -> bool {
        let mut alive = G::agree(&self.window, slot, targets) & due;
        let mut holding = 0;
        while alive != 0 {
            let i = alive.trailing_zeros() as usize;
            alive &= alive - 1;
            let back = self.window.lanes_back(self.window.slot_after(slot, i), LANES - 1);
            holding |= u32::from(T::equal_pairs(back, recent) == 0xFFFF) << i;
        }
        holding != 0 && self.track_all(x, holding, rest)
    }

    /// The runs of the periods of a sampled group that hold on all 16 units (bits of `holding`,
    /// bit `i` for period `rest - i`) are tracked if they can count. Kept out of line so the loop
    /// over groups stays small. Returns whether a tracker started.
    #[cold]
    #[inline(never)]
    fn track_all(&mut self, x: u64, mut holding: u32, rest: u64) -> bool {
        #[cfg(test)]
        HELD.with(|held| held.set(held.get() + u64::from(holding.count_ones())));
        let mut started = false;
        while holding != 0 {
            let i = holding.trailing_zeros();
            holding &= holding - 1;
            started |= self.try_track(x, rest - u64::from(i));
        }
        started
    }

    /// The last 16 units up to `x` repeat those `p` before them: follow the run if it can count.
    /// Returns whether a tracker started.
    fn try_track(&mut self, x: u64, p: u64) -> bool {
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
        if first < self.claim_end {
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

    /// Emits the candidates of unit `x` in order, each unless an earlier finding claims it.
    fn resolve(&mut self, x: u64, out: &mut Vec<Finding>) {
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.sort_by_key(|c| (c.finding.start, c.finding.rule, c.finding.period));
        let mut fired: Option<Option<usize>> = None;
        for candidate in candidates.drain(..) {
            if candidate.finding.anchor() < self.claim_end {
                continue;
            }
            self.claim_end = x + 1;
            fired = Some(candidate.tracker);
            if self.first_finding.is_none() {
                self.first_finding = Some(candidate.finding.clone());
            }
            out.push(candidate.finding);
        }
        self.candidates = candidates;
        let Some(source) = fired else {
            // Candidates that did not fire are claimed for good: stop following them.
            let claim_end = self.claim_end;
            self.trackers.retain(|t| t.fired || t.start + t.period >= claim_end);
            return;
        };
        // Every other run in progress started before this finding's end: none can count now.
        match source {
            Some(i) => {
                let mut kept = self.trackers.swap_remove(i);
                kept.fired = true;
                self.trackers.clear();
                self.trackers.push(kept);
                self.claim_running = true;
            }
            None => {
                self.trackers.clear();
                self.claim_running = false;
                self.line_claim = true;
            }
        }
    }
}

impl<T: Unit> Core<T> {
    /// The same detector storing its units as `U`, which must hold every unit the window does.
    pub fn recast<U: Unit>(&self) -> Core<U> {
        Core {
            rules: self.rules,
            plan: Arc::clone(&self.plan),
            window: self.window.recast(),
            trackers: self.trackers.clone(),
            lines: self.lines.clone(),
            claim_end: self.claim_end,
            claim_running: self.claim_running,
            line_claim: self.line_claim,
            first_finding: self.first_finding.clone(),
            candidates: self.candidates.clone(),
        }
    }
}

/// The units a sample's prefilter tests, as how far each is before the newest: the newest, the
/// oldest and the middle of the last 16.
const PROBES: [usize; 3] = [0, LANES - 1, LANES / 2 - 1];

/// How a sample tests a group of periods on three units: bit `i` set where, for each of
/// [`PROBES`], the unit that far before slot `slot + i` equals its target (the unit as far
/// before the newest).
trait Prefilter {
    const WIDTH: usize;
    /// # Safety
    /// The CPU has the instructions the prefilter uses.
    unsafe fn agree<T: Unit>(window: &Window<T>, slot: Slot, targets: [T; 3]) -> u32;
}

/// 16 periods at a time, with SSE2 (every x86-64 CPU has it) or plain code elsewhere.
struct Narrow;

impl Prefilter for Narrow {
    const WIDTH: usize = LANES;

    #[inline(always)]
    unsafe fn agree<T: Unit>(window: &Window<T>, slot: Slot, targets: [T; 3]) -> u32 {
        T::agree(PROBES.map(|back| window.lanes_back(slot, back)), targets)
    }
}

/// 32 periods at a time, with AVX2.
#[cfg(target_arch = "x86_64")]
struct Wide;

#[cfg(target_arch = "x86_64")]
impl Prefilter for Wide {
    const WIDTH: usize = WIDE;

    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn agree<T: Unit>(window: &Window<T>, slot: Slot, targets: [T; 3]) -> u32 {
        T::agree_wide(PROBES.map(|back| window.lanes_back(slot, back)), targets)
    }
}

/// Whether the detector runs its AVX2 build, sampling 32 periods at a time: the CPU has AVX2 and
/// the bit instructions every CPU with AVX2 has. Asked once, then one load per piece.
#[cfg(target_arch = "x86_64")]
fn avx2_build() -> bool {
    #[cfg(test)]
    if BASELINE_BUILD.with(std::cell::Cell::get) {
        return false;
    }
    static HAS_AVX2_BUILD_FEATURES: OnceLock<bool> = OnceLock::new();
    *HAS_AVX2_BUILD_FEATURES.get_or_init(|| {
        std::is_x86_feature_detected!("avx2")
            && std::is_x86_feature_detected!("bmi1")
            && std::is_x86_feature_detected!("bmi2")
            && std::is_x86_feature_detected!("lzcnt")
            && std::is_x86_feature_detected!("popcnt")
    })
}

#[cfg(test)]
thread_local! {
    /// Set by tests to run the baseline build on a CPU that has AVX2, so both are checked.
    pub(crate) static BASELINE_BUILD: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    /// Periods found holding at a sample on this thread, each then tracked or dismissed: tests
    /// bound the work of sampling inside runs.
    pub(crate) static HELD: std::cell::Cell<u64> = const { std::cell::Cell::new(0) };
}
