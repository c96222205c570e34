//! The sampling plan: which periods the detector compares at which units, and how much history
//! it keeps, worked out once per set of rules.

use std::sync::{Arc, Mutex, OnceLock};

use crate::classes::PACKED_CONTEXT;
use crate::rules::{Rules, DEFAULT_RULES, SAMPLE_UNITS};

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

/// Plans of rules other than the defaults kept for reuse (the token preset, a caller's own
/// rules), the most recently used last; a few sets of rules are in use at a time.
const CACHED_PLANS: usize = 8;

impl Plan {
    /// The plan of `rules`, worked out once per set of rules in use: working one out takes
    /// 25-100 us, and a detector is made per stream (every `TokenStreams.add`).
    pub fn shared(rules: &Rules) -> Arc<Plan> {
        static DEFAULT_PLAN: OnceLock<Arc<Plan>> = OnceLock::new();
        static PLANS: Mutex<Vec<(Rules, Arc<Plan>)>> = Mutex::new(Vec::new());
        if *rules == DEFAULT_RULES {
            return Arc::clone(DEFAULT_PLAN.get_or_init(|| Arc::new(Plan::new(rules))));
        }
        // A poisoned lock only means another thread panicked while holding it: the list is
        // whole at every point a panic can happen.
        let mut plans = PLANS.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let plan = match plans.iter().position(|(cached, _)| cached == rules) {
            Some(at) => plans.remove(at).1,
            None => Arc::new(Plan::new(rules)),
        };
        if plans.len() == CACHED_PLANS {
            plans.remove(0);
        }
        plans.push((*rules, Arc::clone(&plan)));
        plan
    }

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
        // run's class depends on it), and the longest block.
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
    use crate::rules::{CONSERVATIVE_RULES, TOKEN_RULES};

    #[test]
    fn a_plan_is_worked_out_once_per_set_of_rules_in_use() {
        for rules in [DEFAULT_RULES, TOKEN_RULES, CONSERVATIVE_RULES] {
            assert!(Arc::ptr_eq(&Plan::shared(&rules), &Plan::shared(&rules)));
        }
        let first = Plan::shared(&TOKEN_RULES);
        assert_eq!(first.window_len, Plan::new(&TOKEN_RULES).window_len);
    }

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
