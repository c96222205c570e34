//! Sampling: at a sampled unit, which periods hold over the last 16 units. A group of periods
//! is ruled out on three units first, 32 periods at a time where the CPU has AVX2 (the build
//! chosen once per process), 16 otherwise.

use super::{Core, K};
use crate::finding::Finding;
#[cfg(target_arch = "x86_64")]
use crate::lanes::WIDE;
use crate::lanes::{Unit, LANES};
use crate::window::{Slot, Window};
#[cfg(target_arch = "x86_64")]
use std::sync::OnceLock;

impl<T: Unit> Core<T> {
    /// [`Core::work_through`] compiled for the CPUs that have AVX2 (and the bit instructions
    /// that came with it), sampling 32 periods per group.
    ///
    /// # Safety
    /// The CPU has AVX2, BMI1, BMI2, LZCNT and POPCNT.
    #[cfg(target_arch = "x86_64")]
    #[target_feature(enable = "avx2,bmi1,bmi2,lzcnt,popcnt")]
    pub(super) unsafe fn work_through_wide<S: Unit>(&mut self, piece: &[S], first: u64, out: &mut Vec<Finding>) {
        self.work_through::<S, Wide>(piece, first, out)
    }

    /// Samples the sampled units in `x..until`, where nothing else happens. Returns the unit after
    /// the one where a tracker started or a finding fired, if one did.
    ///
    /// # Safety
    /// The CPU has what `G` needs.
    #[inline(always)]
    pub(super) unsafe fn sample_until<G: Prefilter>(
        &mut self,
        x: u64,
        until: u64,
        out: &mut Vec<Finding>,
    ) -> Option<u64> {
        let mut at = self.next_sample(x);
        while at < until {
            let started = self.sample::<G>(at);
            if started || !self.candidates.is_empty() {
                if !self.candidates.is_empty() {
                    self.resolve(at, out);
                }
                if started || self.claim.run_running() {
                    return Some(at + 1);
                }
            }
            at += self.plan.sample_spacing;
        }
        None
    }

    /// The first unit at or after `x` where sampling is due.
    pub(super) fn next_sample(&self, x: u64) -> u64 {
        if self.claim.run_running() {
            return u64::MAX;
        }
        // The spacing is a power of two.
        let below = self.plan.sample_spacing - 1;
        (x.max(K) + below) & !below
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
}

/// The units a sample's prefilter tests, as how far each is before the newest: the newest, the
/// oldest and the middle of the last 16.
const PROBES: [usize; 3] = [0, LANES - 1, LANES / 2 - 1];

/// How a sample tests a group of periods on three units: bit `i` set where, for each of
/// [`PROBES`], the unit that far before slot `slot + i` equals its target (the unit as far
/// before the newest).
pub(super) trait Prefilter {
    const WIDTH: usize;
    /// # Safety
    /// The CPU has the instructions the prefilter uses.
    unsafe fn agree<T: Unit>(window: &Window<T>, slot: Slot, targets: [T; 3]) -> u32;
}

/// 16 periods at a time, with SSE2 (every x86-64 CPU has it) or plain code elsewhere.
pub(super) struct Narrow;

impl Prefilter for Narrow {
    const WIDTH: usize = LANES;

    #[inline(always)]
    unsafe fn agree<T: Unit>(window: &Window<T>, slot: Slot, targets: [T; 3]) -> u32 {
        T::agree(PROBES.map(|back| window.lanes_back(slot, back)), targets)
    }
}

/// 32 periods at a time, with AVX2.
#[cfg(target_arch = "x86_64")]
pub(super) struct Wide;

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
pub(super) fn avx2_build() -> bool {
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
