//! The streaming detector: units go in one at a time, findings come out at the unit where their
//! rule first holds, whatever the chunking.
//!
//! Periodic stretches are found without comparing every period at every unit. A run of period `p`
//! must hold for `least_required_span(p) - p` units before it can count, so it is enough to look
//! for it at sampled units, spaced less than that apart: at unit `x` the detector compares a
//! fingerprint of the last 16 units with the fingerprint `p` units back, for every `p` whose
//! spacing divides `x` (spacings are powers of two, so the periods due at `x` are one contiguous
//! range, checked as a vector compare). A fingerprint match is confirmed unit by unit, the run is
//! traced back to where it starts, and from then on a tracker follows it exactly until it breaks.
//! Clean text costs a few operations per unit whatever `max_long_period` is, and no run that can
//! reach its rule is missed, so findings and offsets are exact.

use std::sync::OnceLock;

use crate::finding::{Finding, Rule};
use crate::lines::{LineEvent, Lines};
use crate::rules::{KindCounts, Rules, DEFAULT_RULES, FINGERPRINT_UNITS};
use crate::window::Window;

const K: u64 = FINGERPRINT_UNITS as u64;
/// Odd multiplier of the rolling fingerprint (wrapping arithmetic).
const FP_BASE: u32 = 0x9E37_79B1;

/// A streaming detector over a sequence of units (code points or token ids).
#[derive(Clone, Debug)]
pub struct Detector {
    rules: Rules,
    /// `due_upto[t]`: the largest period that must be sampled at a unit whose index has `t`
    /// trailing zero bits.
    due_upto: [u32; 65],
    window: Window,
    /// Fingerprints of the last units in a ring (a power of two longer than the longest
    /// period), `fingerprints[i & fp_mask]` for unit `i`; 16 bits each: a false match only costs
    /// a 16-unit comparison.
    fingerprints: Vec<u16>,
    fp_mask: usize,
    fingerprint: u32,
    /// `FP_BASE^K`, to drop the unit leaving the fingerprint.
    fp_out: u32,
    trackers: Vec<Tracker>,
    lines: Lines,
    /// A later finding must have its anchor at or after this offset.
    claim_end: u64,
    /// A fired periodic tracker is still running: nothing new can be found until it breaks.
    claim_running: bool,
    /// The line streak that fired is the claim.
    line_claim: bool,
    units_seen: u64,
    first_finding: Option<Finding>,
    candidates: Vec<Candidate>,
}

/// What the rules imply for sampling and memory, worked out once per set of rules.
#[derive(Clone, Copy, Debug)]
struct Plan {
    due_upto: [u32; 65],
    window_len: usize,
}

impl Plan {
    fn new(rules: &Rules) -> Plan {
        let max_long = rules.max_long_period;
        let least: Vec<u64> = (0..=max_long).map(|p| if p == 0 { 0 } else { rules.least_required_span(p) }).collect();
        // Sampling spacing of each period: room for a sampled unit inside every run before it can
        // reach its rule, made non-decreasing in the period so the periods due at a unit form one
        // range. A period is sampled at multiples of the largest power of two within its room.
        let mut due_upto = [0u32; 65];
        let mut room = u64::MAX;
        for p in (1..=max_long).rev() {
            room = room.min(least[p as usize] - u64::from(p) - K + 1);
            let tier = room.ilog2() as usize;
            due_upto[tier] = due_upto[tier].max(p);
        }
        for tier in 1..due_upto.len() {
            due_upto[tier] = due_upto[tier].max(due_upto[tier - 1]);
        }
        // The window holds every run until it can reach its rule, and the longest block.
        let window_len = least.iter().map(|&span| span + 2).max().unwrap_or(0).max(u64::from(max_long) + K + 2);
        Plan { due_upto, window_len: window_len as usize }
    }
}

/// Follows one periodic run, unit by unit, once sampling has seen it.
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
}

#[derive(Clone, Debug)]
struct Candidate {
    finding: Finding,
    /// Index into `trackers`, or `None` for the line streak.
    tracker: Option<usize>,
}

impl Detector {
    /// A detector with the given rules (which must have passed [`Rules::validate`]).
    pub fn new(rules: Rules) -> Detector {
        debug_assert!(rules.validate().is_ok());
        // Working out the plan takes ~100 us; the default rules' is worked out once.
        static DEFAULT_PLAN: OnceLock<Plan> = OnceLock::new();
        let plan = if rules == DEFAULT_RULES { *DEFAULT_PLAN.get_or_init(|| Plan::new(&rules)) } else { Plan::new(&rules) };
        let fp_out = (0..K).fold(1u32, |power, _| power.wrapping_mul(FP_BASE));
        Detector {
            rules,
            due_upto: plan.due_upto,
            window: Window::new(plan.window_len),
            fingerprints: Vec::new(),
            fp_mask: (rules.max_long_period as usize + 1).next_power_of_two() - 1,
            fingerprint: 0,
            fp_out,
            trackers: Vec::new(),
            lines: Lines::new(&rules),
            claim_end: 0,
            claim_running: false,
            line_claim: false,
            units_seen: 0,
            first_finding: None,
            candidates: Vec::new(),
        }
    }

    pub fn rules(&self) -> &Rules {
        &self.rules
    }

    pub fn units_seen(&self) -> u64 {
        self.units_seen
    }

    /// The first finding since creation or the last reset.
    pub fn finding(&self) -> Option<&Finding> {
        self.first_finding.as_ref()
    }

    /// Units of history the detector keeps: a line longer than this is reported by its tail.
    pub fn window_len(&self) -> usize {
        self.window.len()
    }

    /// Forgets everything, as if new.
    pub fn reset(&mut self) {
        *self = Detector::new(self.rules.clone());
    }

    /// Feeds text; pushes the findings whose rule first held inside it onto `out`.
    pub fn feed_str(&mut self, text: &str, out: &mut Vec<Finding>) {
        self.allocate();
        for ch in text.chars() {
            self.step(u32::from(ch), out);
        }
    }

    /// Feeds units (code points, or token ids); pushes new findings onto `out`.
    pub fn feed_units(&mut self, units: &[u32], out: &mut Vec<Finding>) {
        self.allocate();
        for &unit in units {
            self.step(unit, out);
        }
    }

    /// Processes one unit.
    pub fn push(&mut self, unit: u32, out: &mut Vec<Finding>) {
        self.allocate();
        self.step(unit, out);
    }

    /// The buffers are allocated on the first unit, so an idle detector holds nothing.
    #[inline]
    fn allocate(&mut self) {
        if self.fingerprints.is_empty() {
            self.window.allocate();
            self.fingerprints = vec![0; self.fp_mask + 1];
        }
    }

    #[inline]
    fn step(&mut self, unit: u32, out: &mut Vec<Finding>) {
        let x = self.units_seen;
        self.window.push(unit);
        self.units_seen += 1;
        self.push_fingerprint(x, unit);
        if !self.trackers.is_empty() {
            self.follow_trackers(x, unit);
        }
        if let Some(event) = self.lines.push(x, unit, &self.window) {
            self.on_line(x, event);
        }
        if !self.claim_running && self.due_upto[x.trailing_zeros().min(64) as usize] != 0 && x >= K {
            self.sample(x);
        }
        if !self.candidates.is_empty() {
            self.resolve(x, out);
        }
    }

    fn push_fingerprint(&mut self, x: u64, unit: u32) {
        // Rolling polynomial over the last K units; `+ 1` keeps unit 0 from vanishing, and the
        // window's filler (u32::MAX) adds nothing, so the first K units need no special case.
        let leaving = self.window.back(K).wrapping_add(1);
        let fp = self.fingerprint.wrapping_mul(FP_BASE).wrapping_add(unit.wrapping_add(1));
        self.fingerprint = fp.wrapping_sub(self.fp_out.wrapping_mul(leaving));
        self.fingerprints[x as usize & self.fp_mask] = (self.fingerprint >> 16) as u16;
    }

    fn follow_trackers(&mut self, x: u64, unit: u32) {
        let mut i = 0;
        while i < self.trackers.len() {
            let t = &self.trackers[i];
            let keep = if self.window.back(t.period) != unit {
                if t.fired {
                    self.claim_running = false;
                }
                false
            } else if t.fired {
                self.claim_end = x + 1;
                true
            } else {
                x + 1 - t.start != t.need || self.settle(i, x)
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
            if !self.is_primitive(x, start, period) {
                return false;
            }
            let mut counts = KindCounts::default();
            for back in (x - start + 1 - period..=x - start).rev() {
                counts.add(self.window.back(back));
            }
            let need = self.rules.required_span(period as u32, counts.kind());
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
                // A line longer than the window is reported by the tail the window holds.
                let content_end = line_start + period;
                let room = (self.window.len() as u64 - 1).saturating_sub(x - content_end);
                let block_len = period.min(room);
                let first_back = x - (content_end - block_len);
                let finding = Finding {
                    rule: Rule::IdenticalLines,
                    period,
                    block: self.units_back(first_back, block_len),
                    start,
                    repeats,
                    detected_at: x + 1,
                };
                self.candidates.push(Candidate { finding, tracker: None });
            }
        }
    }

    /// `len` units, oldest first, the first of them `first_back` places before the newest.
    fn units_back(&self, first_back: u64, len: u64) -> Vec<u32> {
        (0..len).map(|i| self.window.back(first_back - i)).collect()
    }

    /// The block of a run, read from its latest full copy (the first may have left the window).
    fn last_copy(&self, x: u64, t: &Tracker) -> Vec<u32> {
        let copies = (x + 1 - t.start) / t.period;
        let copy_start = t.start + (copies - 1) * t.period;
        self.units_back(x - copy_start, t.period)
    }

    fn periodic_finding(&self, t: &Tracker, x: u64) -> Finding {
        let rule = if t.period <= u64::from(self.rules.max_period) { Rule::PeriodicRun } else { Rule::LongBlock };
        Finding {
            rule,
            period: t.period,
            block: self.last_copy(x, t),
            start: t.start,
            repeats: (x + 1 - t.start) / t.period,
            detected_at: x + 1,
        }
    }

    /// Compares the fingerprint at `x` with those of every period due at `x`.
    fn sample(&mut self, x: u64) {
        let due = u64::from(self.due_upto[x.trailing_zeros().min(64) as usize]);
        // The fingerprint `p` back must cover K real units.
        let due = due.min(x + 1 - K);
        if due == 0 {
            return;
        }
        let here = x as usize & self.fp_mask;
        let target = self.fingerprints[here];
        // Units x - due ..= x - 1 in the ring: one slice, or two where it wraps.
        let oldest = (x - due) as usize & self.fp_mask;
        let (first, second) = if oldest < here {
            (&self.fingerprints[oldest..here], &[][..])
        } else {
            (&self.fingerprints[oldest..], &self.fingerprints[..here])
        };
        let mut hits: Vec<u64> = Vec::new();
        for (offset, part) in [(0, first), (first.len(), second)] {
            const LANES: usize = 32;
            for (c, chunk) in part.chunks(LANES).enumerate() {
                // Branch-free test of the whole chunk, so the compiler can vectorise it.
                if !chunk.iter().fold(false, |any, &f| any | (f == target)) {
                    continue;
                }
                for (j, &f) in chunk.iter().enumerate() {
                    if f == target {
                        hits.push(due - (offset + c * LANES + j) as u64);
                    }
                }
            }
        }
        for p in hits {
            self.try_track(x, p);
        }
    }

    /// A fingerprint `p` back matched at `x`: confirm it and follow the run if it can count.
    fn try_track(&mut self, x: u64, p: u64) {
        // A run of a divisor of `p` that covers the last 2p units holds every p-run through
        // here, and its block is a power of the shorter one: nothing to trace.
        if self.trackers.iter().any(|t| t.period == p || (p % t.period == 0 && x >= t.start + 2 * p)) {
            return;
        }
        if (0..K).any(|m| self.window.back(m) != self.window.back(m + p)) {
            return;
        }
        // Trace the run back: `first` is its first unit equal to the one `p` before it.
        let oldest = self.units_seen - self.units_seen.min(self.window.len() as u64);
        let floor = p.max(oldest + p);
        let mut first = x + 1 - K;
        while first > floor && self.unit_at(x, first - 1) == self.unit_at(x, first - 1 - p) {
            first -= 1;
        }
        if first == floor && first != p {
            // The run is older than the window, so it was followed (or ruled out) already.
            return;
        }
        if first < self.claim_end {
            return;
        }
        let start = first - p;
        if self.trackers.iter().any(|t| p % t.period == 0 && t.start <= start) {
            // A shorter period covers this block: it is a power of a shorter one.
            return;
        }
        let need = self.rules.least_required_span(p as u32);
        if x + 1 - start > need {
            // Sampling sees every run before it can count: one past that was judged already
            // (its block is a power of a shorter one).
            return;
        }
        self.trackers.push(Tracker { period: p, start, need, settled: false, fired: false });
        if x + 1 - start == need && !self.settle(self.trackers.len() - 1, x) {
            self.trackers.pop();
        }
    }

    #[inline]
    fn unit_at(&self, x: u64, index: u64) -> u32 {
        self.window.back(x - index)
    }

    /// Whether `units[start..start + p]` is not a power of a shorter block.
    fn is_primitive(&self, x: u64, start: u64, p: u64) -> bool {
        let mut rest = p;
        let mut factor = 2;
        while rest > 1 {
            if factor * factor > rest {
                factor = rest;
            }
            if rest % factor == 0 {
                let q = p / factor;
                if (start + q..start + p).all(|i| self.unit_at(x, i) == self.unit_at(x, i - q)) {
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

/// Every finding in `units`, as a detector fed them would report.
pub fn scan_units(units: &[u32], rules: &Rules) -> Vec<Finding> {
    let mut detector = Detector::new(rules.clone());
    let mut out = Vec::new();
    detector.feed_units(units, &mut out);
    out
}

/// Every finding in `text` (offsets in code points).
pub fn scan_str(text: &str, rules: &Rules) -> Vec<Finding> {
    let mut detector = Detector::new(rules.clone());
    let mut out = Vec::new();
    detector.feed_str(text, &mut out);
    out
}
