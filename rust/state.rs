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
//!
//! This file schedules the work of a piece and emits findings; `sampling` finds the periods that
//! hold at a sampled unit (with the CPU's widest prefilter), `runs` traces and follows their
//! runs, and `claims` keeps what earlier findings cover.

mod claims;
mod runs;
mod sampling;

use std::sync::Arc;

use crate::counter_run::{CountEvent, CounterRun};
use crate::counters::{CounterEvent, Counters};
use crate::finding::{Finding, Rule};
use crate::identical::{IdenticalLines, LineEvent};
use crate::lanes::{Marks, Unit, LANES};
use crate::lines::LineReader;
use crate::plan::Plan;
use crate::rules::{Rules, SAMPLE_UNITS};
use crate::template_lines::{TemplateEvent, TemplateLines};
use crate::window::{Window, PIECE};
use claims::Claim;
use runs::Tracker;
#[cfg(target_arch = "x86_64")]
use sampling::avx2_build;
use sampling::{Narrow, Prefilter};
#[cfg(test)]
pub(crate) use sampling::{BASELINE_BUILD, HELD};

const K: u64 = SAMPLE_UNITS as u64;
const _: () = assert!(SAMPLE_UNITS as usize == LANES, "a sample is one vector of lanes");

/// Everything the detector knows, over a window storing units as `T`.
#[derive(Clone, Debug)]
pub struct Core<T: Unit> {
    rules: Rules,
    plan: Arc<Plan>,
    window: Window<T>,
    trackers: Vec<Tracker>,
    lines: LineRules,
    /// What earlier findings cover.
    claim: Claim,
    first_finding: Option<Finding>,
    candidates: Vec<Candidate>,
}

/// The line rules, side by side on the lines the reader reads, and the counts read inside the
/// lines long enough to hold one.
#[derive(Clone, Debug)]
struct LineRules {
    reader: LineReader,
    identical: IdenticalLines,
    counters: Counters,
    templates: TemplateLines,
    counts: CounterRun,
}

impl LineRules {
    fn new(rules: &Rules) -> LineRules {
        LineRules {
            reader: LineReader::default(),
            identical: IdenticalLines::new(rules),
            counters: Counters::new(rules),
            templates: TemplateLines::new(rules),
            counts: CounterRun::new(rules),
        }
    }

    /// Before `n` units are appended to `window`: each keeps what it needs of the units that
    /// would leave it.
    fn before_append<T: Unit>(&mut self, window: &Window<T>, n: usize) {
        let leaving = window.oldest_after(n);
        self.reader.before_append(window, leaving);
        self.counters.before_append(window, leaving);
        self.identical.before_append(window, leaving);
        self.templates.before_append(window, leaving);
    }

    /// Unit `x` of `window` is a newline: what the line it ends did to each rule's streak, or
    /// `None` for a blank line. Inlined into the loop over a piece's newlines.
    #[inline(always)]
    fn on_newline<T: Unit>(&mut self, x: u64, before: Option<u32>, window: &Window<T>) -> Option<LineEvents> {
        let line = self.reader.on_newline(x, before, window);
        if line.content_len == 0 {
            return None;
        }
        let identical = self.identical.on_line(line, window);
        let repeats_previous = identical != LineEvent::NewStreak;
        let counter = self.counters.on_line(line.start, line.content_len, line.last, x, repeats_previous, window);
        let template = self.templates.on_line(line.start, line.content_len, x, window);
        Some(LineEvents { identical, counter, template })
    }
}

/// What the end of a non-blank line did to the streak of identical lines, to the streak of
/// counter lines and to the streak of template lines (`None` when the line left that streak as
/// it was: none running and none started, or a line the template rule passes over).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct LineEvents {
    identical: LineEvent,
    counter: Option<CounterEvent>,
    template: Option<TemplateEvent>,
}

impl LineEvents {
    /// Whether a streak reached its rule at this line.
    fn reached(&self) -> bool {
        matches!(self.identical, LineEvent::Reached { .. })
            || matches!(self.counter, Some(CounterEvent::Reached))
            || matches!(self.template, Some(TemplateEvent::Reached))
    }
}

#[derive(Clone, Debug)]
struct Candidate {
    finding: Finding,
    /// Index into `trackers`, or `None` for the line streak.
    tracker: Option<usize>,
}

impl<T: Unit> Core<T> {
    pub fn new(rules: Rules) -> Core<T> {
        let plan = Plan::shared(&rules);
        Core {
            rules,
            window: Window::new(plan.window_len),
            plan,
            trackers: Vec::new(),
            lines: LineRules::new(&rules),
            claim: Claim::default(),
            first_finding: None,
            candidates: Vec::new(),
        }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    /// Forgets the stream, as a new core would, but keeps the window's allocation.
    pub fn reset(&mut self) {
        let mut window = std::mem::replace(&mut self.window, Window::new(0));
        window.clear();
        *self = Core { window, ..Core::new(self.rules) };
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
            + self.lines.counters.heap_bytes()
            + self.lines.templates.heap_bytes()
            + self.lines.counts.heap_bytes()
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
        if self.trackers.is_empty()
            && self.next_sample(first) >= end
            && end - self.lines.reader.current_start() < self.lines.counts.gate()
            && !ends_a_line()
        {
            // Nothing can happen in this piece (most streamed deltas): no line ends, no sample
            // is due, no run is followed (so no claim runs either), and the line is too short
            // to hold a count.
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

    /// Works through the units of `piece`, appended from `first` on, where something can happen.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn work_through<S: Unit, G: Prefilter>(&mut self, piece: &[S], first: u64, out: &mut Vec<Finding>) {
        let end = self.window.end();
        let mut newlines = Marks::<{ PIECE / 64 }>::new();
        newlines.list(piece, b'\n');
        if self.lines.counts.gate() != u64::MAX {
            self.counts_ahead(&newlines, first);
        }
        let mut x = first;
        let (mut newline, mut line) = self.lines_ahead(piece, &newlines, first, x);
        loop {
            let mut event = newline.min(self.lines.counts.pending_at());
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
        self.claim.extend_to(end);
    }

    /// The lines of the piece (appended from `first` on, its newlines `newlines`) long enough to
    /// hold a count, queued for the counts to read, which read up to their first event. The line
    /// reader has read none of the piece's newlines yet. Most pieces hold no such line, which one
    /// look at their newlines tells: a line of `gate` units or more between two of them leaves a
    /// whole word of 64 units with none, unless the gate is below 128 (tests' rules).
    #[inline(always)]
    fn counts_ahead<const N: usize>(&mut self, newlines: &Marks<N>, first: u64) {
        let (gate, end) = (self.lines.counts.gate(), self.window.end());
        let mut start = self.lines.reader.current_start();
        let marks = newlines.from(0);
        let long = match (marks.first(), marks.last()) {
            (Some(&head), Some(&tail)) => {
                first + u64::from(head) + 1 - start >= gate
                    || end - (first + u64::from(tail) + 1) >= gate
                    || newlines.has_a_bare_word()
                    || gate < 128
            }
            _ => end - start >= gate,
        };
        if !long {
            return;
        }
        let mut queued = false;
        for &i in marks {
            let at = first + u64::from(i);
            if at + 1 - start >= gate {
                self.lines.counts.queue(start, at + 1);
                queued = true;
            }
            start = at + 1;
        }
        if end - start >= gate {
            self.lines.counts.queue(start, end);
            queued = true;
        }
        if queued {
            self.lines.counts.resume(&self.window);
            self.count_read();
        }
    }

    /// Works through the piece's newlines from `x` on while their lines change nothing but the
    /// streaks of identical and of counter lines, which nothing else reads: up to the first
    /// whose event matters to the rest (a streak reaching its rule, or any line while a line
    /// finding is claimed).
    /// Returns that newline and its event, for the units before it to be worked through first,
    /// or `u64::MAX` if none does. Most newlines thus cost a list entry and a length compare.
    #[inline(always)]
    fn lines_ahead<S: Unit, const N: usize>(
        &mut self,
        piece: &[S],
        newlines: &Marks<N>,
        first: u64,
        x: u64,
    ) -> (u64, Option<LineEvents>) {
        for &i in newlines.from((x - first) as usize) {
            let at = first + u64::from(i);
            // The unit before the newline, read from the piece where it is in it.
            let before = usize::from(i).checked_sub(1).map(|i| piece[i].into());
            let event = self.lines.on_newline(at, before, &self.window);
            if event.is_some_and(|event| self.claim.streak_running() || event.reached()) {
                return (at, event);
            }
        }
        (u64::MAX, None)
    }

    /// After a read of the counts: a count that fired and ended stops extending the claim.
    fn count_read(&mut self) {
        if self.lines.counts.take_broken() {
            self.claim.streak_ended(Rule::CounterRun);
        }
    }

    /// Everything that happens at unit `x`, given the event of the line it ends if that matters.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    unsafe fn step<G: Prefilter>(&mut self, x: u64, line: Option<LineEvents>, out: &mut Vec<Finding>) {
        if !self.trackers.is_empty() {
            self.follow_trackers(x, self.window.at(x));
        }
        if let Some(event) = line {
            self.on_line(x, event);
        }
        let count = x == self.lines.counts.pending_at();
        if count {
            self.on_count(x);
        }
        // Samples `x` if it is due (and emits what that finds with the rest).
        self.sample_until::<G>(x, x + 1, out);
        if !self.candidates.is_empty() {
            self.resolve(x, out);
        }
        if count {
            // Once what the count did at `x` is settled (a claim it fired holds from here).
            self.lines.counts.resume(&self.window);
            self.count_read();
        }
    }

    /// The counts' read stopped at unit `x`: a count reached its numbers there, or one that did
    /// gained a number.
    fn on_count(&mut self, x: u64) {
        match self.lines.counts.take_pending() {
            CountEvent::Reached => {
                let ((start, block), repeats) = (self.lines.counts.first(), self.lines.counts.need());
                self.streak_reached(Rule::CounterRun, start, block, repeats, x);
            }
            CountEvent::Continued => self.claim.streak_continued_at(x, Rule::CounterRun),
        }
    }

    fn on_line(&mut self, x: u64, events: LineEvents) {
        match events.identical {
            LineEvent::Continued => self.claim.streak_continued_at(x, Rule::IdenticalLines),
            LineEvent::NewStreak => self.claim.streak_ended(Rule::IdenticalLines),
            LineEvent::Reached { start, line_start, period, copies } => {
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
                    repeats: copies,
                    detected_at: x + 1,
                    end: x + 1,
                };
                self.candidates.push(Candidate { finding, tracker: None });
            }
        }
        match events.counter {
            None => {}
            Some(CounterEvent::Continued) => self.claim.streak_continued_at(x, Rule::CounterLines),
            Some(CounterEvent::Broken) => self.claim.streak_ended(Rule::CounterLines),
            Some(CounterEvent::Reached) => {
                let counters = &self.lines.counters;
                let ((start, block), repeats) = (counters.first_cycle(), counters.lines());
                self.streak_reached(Rule::CounterLines, start, block, repeats, x);
            }
        }
        match events.template {
            None => {}
            Some(TemplateEvent::Continued) => self.claim.streak_continued_at(x, Rule::TemplateLines),
            Some(TemplateEvent::Broken) => self.claim.streak_ended(Rule::TemplateLines),
            Some(TemplateEvent::Reached) => {
                let templates = &self.lines.templates;
                let ((start, block), repeats) = (templates.first_line(), templates.lines());
                self.streak_reached(Rule::TemplateLines, start, block, repeats, x);
            }
        }
    }

    /// A streak of `rule` whose first line (or cycle) `block` starts at `start` reached its
    /// rule with `repeats` lines at the newline `x`: a candidate finding, its block as long as
    /// its period.
    fn streak_reached(&mut self, rule: Rule, start: u64, block: Vec<u32>, repeats: u64, x: u64) {
        let finding =
            Finding { rule, period: block.len() as u64, block, start, repeats, detected_at: x + 1, end: x + 1 };
        self.candidates.push(Candidate { finding, tracker: None });
    }

    /// Emits the candidates of unit `x` in order, each unless an earlier finding claims it.
    fn resolve(&mut self, x: u64, out: &mut Vec<Finding>) {
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.sort_by_key(|c| (c.finding.start, c.finding.rule, c.finding.period));
        let mut fired: Option<(Option<usize>, Rule)> = None;
        for candidate in candidates.drain(..) {
            if self.claim.covers(candidate.finding.anchor()) {
                continue;
            }
            self.claim.fired_at(x);
            fired = Some((candidate.tracker, candidate.finding.rule));
            if self.first_finding.is_none() {
                self.first_finding = Some(candidate.finding.clone());
            }
            out.push(candidate.finding);
        }
        self.candidates = candidates;
        let Some(source) = fired else {
            // Candidates that did not fire are claimed for good: stop following them.
            self.drop_claimed_runs();
            return;
        };
        // Every other run in progress started before this finding's end: none can count now.
        match source {
            (Some(i), _) => {
                self.follow_fired_run(i);
                self.claim.run_fired();
            }
            (None, rule) => {
                self.trackers.clear();
                self.claim.streak_fired(rule);
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
            claim: self.claim,
            first_finding: self.first_finding.clone(),
            candidates: self.candidates.clone(),
        }
    }
}
