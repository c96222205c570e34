//! A slow, direct reading of the rules, for tests: every period at every unit, every line.
//! The streaming detector must agree with it exactly.

use crate::classes::{BlockKind, PACKED_CONTEXT};
use crate::counters::{counts_on, required_lines};
use crate::finding::{Finding, Rule};
use crate::rules::Rules;

/// A finding the rules allow (as its rule first holds), before claims are applied, and how far
/// its region reaches by time t.
struct Candidate {
    finding: Finding,
    anchor: u64,
    /// The region whole: where it ends and the full copies in it.
    end: u64,
    copies: u64,
    /// Offsets at which the region's claim grows (each value is the claim from then on).
    claim_steps: Vec<u64>,
}

impl Candidate {
    fn claim_at(&self, t: u64) -> u64 {
        self.claim_steps.iter().copied().filter(|&c| c <= t).max().unwrap_or(0)
    }
}

fn is_primitive(block: &[u32]) -> bool {
    let p = block.len();
    !(1..p).any(|q| p % q == 0 && (q..p).all(|i| block[i] == block[i - q]))
}

fn is_ws(u: u32) -> bool {
    char::from_u32(u).is_some_and(char::is_whitespace)
}

fn periodic_candidates(units: &[u32], rules: &Rules, out: &mut Vec<Candidate>) {
    let n = units.len();
    for p in 1..=(rules.max_long_period as usize).min(n) {
        let mut j = p;
        while j < n {
            if units[j] != units[j - p] {
                j += 1;
                continue;
            }
            let first = j;
            while j < n && units[j] == units[j - p] {
                j += 1;
            }
            let (start, end) = (first - p, j);
            let block = &units[start..first];
            if !is_primitive(block) {
                continue;
            }
            let before = &units[start.saturating_sub(PACKED_CONTEXT)..start];
            let kind = BlockKind::of_run(block, before);
            let need = rules.run_span(block, kind) as usize;
            if end - start < need {
                continue;
            }
            let detected_at = start + need;
            let rule = if p <= rules.max_period as usize { Rule::PeriodicRun } else { Rule::LongBlock };
            out.push(Candidate {
                finding: Finding {
                    rule,
                    period: p as u64,
                    block: block.to_vec(),
                    start: start as u64,
                    repeats: (need / p) as u64,
                    detected_at: detected_at as u64,
                    end: detected_at as u64,
                },
                anchor: first as u64,
                end: end as u64,
                copies: ((end - start) / p) as u64,
                claim_steps: (detected_at..=end).map(|c| c as u64).collect(),
            });
        }
    }
}

fn line_candidates(units: &[u32], rules: &Rules, out: &mut Vec<Candidate>) {
    // (line start, content, end after the newline) of each terminated line.
    let mut lines = Vec::new();
    let mut start = 0;
    for (i, &u) in units.iter().enumerate() {
        if u == '\n' as u32 {
            let mut end = i;
            while end > start && is_ws(units[end - 1]) {
                end -= 1;
            }
            lines.push((start, &units[start..end], i + 1));
            start = i + 1;
        }
    }
    let mut i = 0;
    while i < lines.len() {
        let (first_start, content, first_end) = lines[i];
        if content.is_empty() {
            i += 1;
            continue;
        }
        let mut ends = vec![first_end];
        let mut k = i + 1;
        while k < lines.len() && (lines[k].1.is_empty() || lines[k].1 == content) {
            if !lines[k].1.is_empty() {
                ends.push(lines[k].2);
            }
            k += 1;
        }
        let need = rules.required_lines(BlockKind::of_line(content), content.len() as u64) as usize;
        if ends.len() >= need {
            let detected_at = ends[need - 1] as u64;
            // Offline, a last line the text ends in (no newline) is one more copy if it equals
            // the line, part of one if it starts it.
            let (mut end, mut copies) = (*ends.last().unwrap() as u64, ends.len() as u64);
            let tail = &units[start..];
            let mut tail_end = tail.len();
            while tail_end > 0 && is_ws(tail[tail_end - 1]) {
                tail_end -= 1;
            }
            if k == lines.len() && tail_end > 0 && (&tail[..tail_end] == content || content.starts_with(tail)) {
                copies += u64::from(&tail[..tail_end] == content);
                end = units.len() as u64;
            }
            out.push(Candidate {
                finding: Finding {
                    rule: Rule::IdenticalLines,
                    period: content.len() as u64,
                    block: content.to_vec(),
                    start: first_start as u64,
                    repeats: need as u64,
                    detected_at,
                    end: detected_at,
                },
                anchor: first_start as u64,
                end,
                copies,
                claim_steps: ends[need - 1..].iter().map(|&e| e as u64).collect(),
            });
        }
        // The next streak starts at the first differing non-blank line.
        i = k;
    }
}

/// Counter streaks: lines within `max_long_period` units (newline excluded) holding a digit, each
/// counting on from the non-blank line before it (blank lines skipped); any other non-blank line
/// breaks the streak.
fn counter_candidates(units: &[u32], rules: &Rules, out: &mut Vec<Candidate>) {
    // (line start, content, end after the newline, counts) of each terminated non-blank line.
    let mut lines: Vec<(usize, &[u32], usize, bool)> = Vec::new();
    let mut start = 0;
    let digit = |u: &u32| (u32::from(b'0')..=u32::from(b'9')).contains(u);
    let fits = |start: usize, end: usize| end - start <= rules.max_long_period as usize;
    for (i, &u) in units.iter().enumerate() {
        if u == '\n' as u32 {
            let mut end = i;
            while end > start && is_ws(units[end - 1]) {
                end -= 1;
            }
            let content = &units[start..end];
            if !content.is_empty() {
                lines.push((start, content, i + 1, fits(start, i) && content.iter().any(digit)));
            }
            start = i + 1;
        }
    }
    let mut i = 0;
    while i < lines.len() {
        if !lines[i].3 {
            i += 1;
            continue;
        }
        let mut k = i + 1;
        while k < lines.len() && lines[k].3 && counts_on(lines[k - 1].1, lines[k].1) {
            k += 1;
        }
        let streak = &lines[i..k];
        let need = required_lines(rules, streak[streak.len() - 1].1);
        if streak.len() as u64 >= need {
            let need = need as usize;
            let (first_start, content, _, _) = streak[0];
            let ends: Vec<u64> = streak[need - 1..].iter().map(|line| line.2 as u64).collect();
            let (mut end, mut copies) = (ends[ends.len() - 1], streak.len() as u64);
            // Offline, a last line the text ends in (no newline) is one more if it counts on.
            let tail = &units[start..];
            let mut tail_end = tail.len();
            while tail_end > 0 && is_ws(tail[tail_end - 1]) {
                tail_end -= 1;
            }
            if k == lines.len()
                && tail_end > 0
                && fits(start, units.len())
                && counts_on(streak[streak.len() - 1].1, &tail[..tail_end])
            {
                copies += 1;
                end = units.len() as u64;
            }
            out.push(Candidate {
                finding: Finding {
                    rule: Rule::CounterLines,
                    period: content.len() as u64,
                    block: content.to_vec(),
                    start: first_start as u64,
                    repeats: need as u64,
                    detected_at: ends[0],
                    end: ends[0],
                },
                anchor: first_start as u64,
                end,
                copies,
                claim_steps: ends,
            });
        }
        i = k;
    }
}

/// Every finding whole (as an offline scan reports it), by the rules read literally.
pub fn scan(units: &[u32], rules: &Rules) -> Vec<Finding> {
    emitted(units, rules).into_iter().map(|c| Finding { end: c.end, repeats: c.copies, ..c.finding }).collect()
}

/// Every finding as a streaming detector reports it, when its rule first holds.
pub fn first_held(units: &[u32], rules: &Rules) -> Vec<Finding> {
    emitted(units, rules).into_iter().map(|c| c.finding).collect()
}

fn emitted(units: &[u32], rules: &Rules) -> Vec<Candidate> {
    let mut candidates = Vec::new();
    periodic_candidates(units, rules, &mut candidates);
    line_candidates(units, rules, &mut candidates);
    counter_candidates(units, rules, &mut candidates);
    candidates.sort_by_key(|c| (c.finding.detected_at, c.finding.start, c.finding.rule, c.finding.period));
    let mut emitted: Vec<Candidate> = Vec::new();
    for c in candidates {
        let claim = emitted.iter().map(|e| e.claim_at(c.finding.detected_at)).max().unwrap_or(0);
        if c.anchor >= claim {
            emitted.push(c);
        }
    }
    emitted
}
