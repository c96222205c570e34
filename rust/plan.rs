//! The sampling plan: which periods the detector compares at which units, and how much history
//! it keeps, worked out once per set of rules.

use crate::rules::{Rules, PACKED_CONTEXT, SAMPLE_UNITS};

const K: u64 = SAMPLE_UNITS as u64;

/// What the rules imply for sampling and memory, worked out once per set of rules and shared
/// by the detectors that use them.
#[derive(Debug)]
pub struct Plan {
    /// `due_upto[t]`: the largest period that must be sampled at a unit whose index has `t`
    /// trailing zero bits.
    pub due_upto: [u32; 65],
    /// Units between two samples (of the periods sampled most often).
    pub sample_spacing: u64,
    /// `least[p]`: the least span any block of `p` units needs.
    pub least: Vec<u64>,
    /// `tier[p]`: period `p` is sampled every `2^tier[p]` units (worked out once: sampling
    /// asks for every run it sees).
    tier: Vec<u8>,
    pub window_len: usize,
}

impl Plan {
    pub fn new(rules: &Rules) -> Plan {
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
        let sample_spacing = 1 << due_upto.iter().position(|&due| due != 0).expect("period 1 has room");
        // `due_upto` never decreases: the tier of each period is found walking both once.
        let mut at = 0;
        let tier = (0..=max_long)
            .map(|p| {
                while due_upto[at] < p {
                    at += 1;
                }
                at as u8
            })
            .collect();
        // The window holds every run until it can reach its rule, with what comes before it (a
        // run's kind depends on it), and the longest block.
        let context = PACKED_CONTEXT as u64;
        let window_len =
            least.iter().map(|&span| span + 2 + context).max().unwrap_or(0).max(u64::from(max_long) + K + 2);
        Plan { due_upto, sample_spacing, least, tier, window_len: window_len as usize }
    }

    /// Units between two samples of period `p`.
    pub fn spacing(&self, p: u64) -> u64 {
        1 << self.tier[p as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::DEFAULT_RULES;

    /// Each period's spacing is that of the first tier whose due periods reach it, and sampling
    /// at that spacing leaves room to see the period's runs before they can count.
    #[test]
    fn every_period_is_sampled_within_its_room() {
        let plan = Plan::new(&DEFAULT_RULES);
        for p in 1..=u64::from(DEFAULT_RULES.max_long_period) {
            let first_due = plan.due_upto.iter().position(|&due| u64::from(due) >= p).expect("p is sampled");
            assert_eq!(plan.spacing(p), 1 << first_due, "p={p}");
            assert!(plan.spacing(p) <= plan.least[p as usize] - p - K + 1, "p={p}");
        }
    }
}
