//! A slow, direct reading of the rules, for tests: every period at every unit, every line.
//! The streaming detector must agree with it exactly.

use crate::classes::{BlockClass, PACKED_CONTEXT};
use crate::counter_run::MAX_SEPARATOR;
use crate::counters::{counts_on, is_data_line, required_lines, MAX_CYCLE_LINES};
use crate::finding::{Finding, Rule};
use crate::rules::Rules;
use crate::template_lines::{
    copy_save_count, digit_line, holds, is_prose, list_counts_on, near_memory_start, nothing_new, template_of,
    templates_shared, DigitLine, LOOKBACK, MAX_DIGITS,
};

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
            let class = BlockClass::of_run(block, before);
            let need = rules.run_span(block, class) as usize;
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
        let need = rules.required_lines(BlockClass::of_line(content), content.len() as u64) as usize;
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

/// Counter streaks, line by line as the rule reads: non-blank lines (blank ones skipped) within
/// `max_long_period` units (newline excluded). With no streak running, a line that does not
/// repeat the line before it and counts on from the line 1, 2 or 3 before it (the first that does,
/// all of them fitting) starts a streak
/// of cycles of that many lines from that line; a running one goes on with each line that counts
/// on from the line a cycle before, or equals it while fewer than a cycle of lines in a row do; any
/// other line ends it and starts none.
fn counter_candidates(units: &[u32], rules: &Rules, out: &mut Vec<Candidate>) {
    // (line start, content, end after the newline, fits) of each terminated non-blank line.
    let mut lines: Vec<(usize, &[u32], usize, bool)> = Vec::new();
    let mut start = 0;
    let fits = |start: usize, end: usize| end - start <= rules.max_long_period as usize;
    for (i, &u) in units.iter().enumerate() {
        if u == '\n' as u32 {
            let mut end = i;
            while end > start && is_ws(units[end - 1]) {
                end -= 1;
            }
            let content = &units[start..end];
            if !content.is_empty() {
                lines.push((start, content, i + 1, fits(start, i)));
            }
            start = i + 1;
        }
    }
    // The flat count after `after` continues a streak of cycles of `cycle_lines` lines from
    // `before`, if it does.
    let continues = |before: &[u32], after: &[u32], cycle_lines: usize, flat: usize| {
        if cycle_lines > 1 && before == after {
            (flat + 1 < cycle_lines).then_some(flat + 1)
        } else {
            counts_on(before, after, cycle_lines).then_some(0)
        }
    };
    let mut tail = &units[start..];
    while let [rest @ .., last] = tail {
        if !is_ws(*last) {
            break;
        }
        tail = rest;
    }
    let tail_fits = fits(start, units.len());
    // A streak: its first line, lines per cycle, flat count and the lines it needs.
    let mut streak: Option<(usize, usize, usize, u64)> = None;
    for k in 0..=lines.len() {
        if let Some((first, cycle_lines, flat, need)) = streak {
            let line = lines.get(k);
            match line
                .filter(|line| line.3)
                .and_then(|line| continues(lines[k - cycle_lines].1, line.1, cycle_lines, flat))
            {
                Some(flat) => streak = Some((first, cycle_lines, flat, need)),
                None => {
                    // The last line the text ends in (no newline) continues it offline.
                    let tail = (k == lines.len() && !tail.is_empty() && tail_fits)
                        .then(|| continues(lines[k - cycle_lines].1, tail, cycle_lines, flat))
                        .flatten()
                        .is_some();
                    counter_candidate(&lines[first..k], cycle_lines, need, tail.then_some(units.len()), out);
                    streak = None;
                }
            }
            continue;
        }
        // A line that repeats the one before starts none (that is `identical_lines`).
        let Some(line) = lines.get(k).filter(|line| line.3 && (k == 0 || lines[k - 1].1 != line.1)) else { continue };
        let cycle_lines = (1..=MAX_CYCLE_LINES.min(k))
            .find(|&p| lines[k - p..k].iter().all(|line| line.3) && counts_on(lines[k - p].1, line.1, p));
        if let Some(cycle_lines) = cycle_lines {
            let cycle: Vec<Vec<u32>> = lines[k - cycle_lines..k].iter().map(|line| line.1.to_vec()).collect();
            streak = Some((k - cycle_lines, cycle_lines, 0, required_lines(rules, &cycle, line.1)));
        }
    }
}

/// The candidate of a streak of cycles of `cycle_lines` lines that ran over `streak`, if it
/// reached the `need` lines it needs; `tail_end`: the text ends in one more line that continues it.
fn counter_candidate(
    streak: &[(usize, &[u32], usize, bool)],
    cycle_lines: usize,
    need: u64,
    tail_end: Option<usize>,
    out: &mut Vec<Candidate>,
) {
    let need = need as usize;
    if streak.len() < need {
        return;
    }
    let block = streak[..cycle_lines].iter().map(|line| line.1.to_vec()).collect::<Vec<_>>().join(&u32::from(b'\n'));
    let ends: Vec<u64> = streak[need - 1..].iter().map(|line| line.2 as u64).collect();
    let (end, copies) = match tail_end {
        Some(end) => (end as u64, streak.len() as u64 + 1),
        None => (ends[ends.len() - 1], streak.len() as u64),
    };
    let first_start = streak[0].0 as u64;
    out.push(Candidate {
        finding: Finding {
            rule: Rule::CounterLines,
            period: block.len() as u64,
            block,
            start: first_start,
            repeats: need as u64,
            detected_at: ends[0],
            end: ends[0],
        },
        anchor: first_start,
        end,
        copies,
        claim_steps: ends,
    });
}

/// Streaks of template lines, line by line as the rule reads: the lines that go into the lookback
/// (`digit_line`: content, trailing whitespace dropped, of `MIN_UNITS` units or more with a digit,
/// fitting `max_long_period`, not indented as code), each with its template if it is numbered
/// (holds a number); a line indented as code with a digit between two of them ends the streak. A
/// numbered line that recurs (its template among those of the `LOOKBACK` such lines before it) and
/// is prose, or counts on (the line before it is numbered, its first number one less with the same
/// text before it) and is a copy of the latest line of its template save its first number, or that is
/// prose and a near-copy (two of those share a template, and nothing in the text since the latest
/// of them is new after the memory before it), continues the streak or starts one; any other of
/// these lines ends it; all other lines pass. The streak holds at its first line with 1.5 lines per
/// distinct template (as the rule numbers templates; a near-copy counts none) and
/// `template_min_lines` lines, and if a line of it is no prose `code_counter_min_lines` lines as
/// well and two templates. Offline, a last line the text ends in (no newline) is read as if a
/// newline ended it.
fn template_candidates(units: &[u32], rules: &Rules, out: &mut Vec<Candidate>) {
    struct Read {
        start: usize,
        content: Vec<u32>,
        template: Option<Vec<u32>>,
        /// One past its newline, or the text's end for the last line without one.
        end: usize,
    }
    let mut lines = Vec::new();
    // Per remembered line: whether a line indented as code with a digit came since the one before.
    let mut code_before = Vec::new();
    let mut code_since = false;
    let mut start = 0;
    while start < units.len() {
        let newline = units[start..].iter().position(|&u| u == u32::from(b'\n')).map(|i| start + i);
        let text_end = newline.unwrap_or(units.len());
        let mut content_end = text_end;
        while content_end > start && is_ws(units[content_end - 1]) {
            content_end -= 1;
        }
        let content = units[start..content_end].to_vec();
        let end = newline.map_or(units.len(), |i| i + 1);
        let read = digit_line(&content, text_end - start, rules);
        if read == Some(DigitLine::Remembered) {
            let mut template = Vec::new();
            let numbered = template_of(&content, &mut template);
            lines.push(Read { start, content, template: numbered.then_some(template), end });
            code_before.push(std::mem::take(&mut code_since));
        } else if read == Some(DigitLine::Code) {
            code_since = true;
        }
        start = end;
    }
    let terminated = |line: &Read| line.end < units.len() || units.last() == Some(&u32::from(b'\n'));
    // The running streak: its lines (indices), and whether it held (and where in it).
    let mut streak: Vec<usize> = Vec::new();
    let mut held: Option<usize> = None;
    let finish = |streak: &[usize], held: Option<usize>, lines: &[Read], out: &mut Vec<Candidate>| {
        let Some(h) = held else { return };
        let first = &lines[streak[0]];
        let steps: Vec<u64> =
            streak[h..].iter().filter(|&&k| terminated(&lines[k])).map(|&k| lines[k].end as u64).collect();
        out.push(Candidate {
            finding: Finding {
                rule: Rule::TemplateLines,
                period: first.content.len() as u64,
                block: first.content.clone(),
                start: first.start as u64,
                repeats: h as u64 + 1,
                detected_at: steps[0],
                end: steps[0],
            },
            anchor: first.start as u64,
            end: lines[*streak.last().unwrap()].end as u64,
            copies: streak.len() as u64,
            claim_steps: steps,
        });
    };
    // The number of each line's template, as the rule numbers them: a line that recurs takes that
    // of the latest line of its template in its lookback (a new one if that line has none); a
    // near-copy and any other line none (0). Lines of one template in a streak may so count as
    // two templates, where a near-copy of it started a second chain.
    let mut numbers = vec![0u32; lines.len()];
    let mut made = 0;
    for k in 0..lines.len() {
        if code_before[k] {
            finish(&streak, held, &lines, out);
            (streak, held) = (Vec::new(), None);
        }
        let lookback = &lines[k.saturating_sub(LOOKBACK)..k];
        let recurs_to = lines[k].template.as_ref().and_then(|template| {
            (k.saturating_sub(LOOKBACK)..k).rev().find(|&j| lines[j].template.as_ref() == Some(template))
        });
        if let Some(j) = recurs_to {
            if numbers[j] == 0 {
                made += 1;
                numbers[j] = made;
            }
            numbers[k] = numbers[j];
        }
        // A near-copy: two lines of the lookback share a template, and the text since the latest
        // of them brings nothing new after the memory before it.
        let gap_start = k.checked_sub(1).map_or(0, |j| lines[j].start + lines[j].content.len());
        let x = if terminated(&lines[k]) { lines[k].end - 1 } else { lines[k].end };
        let templates: Vec<Option<Vec<u32>>> = lookback.iter().map(|line| line.template.clone()).collect();
        let near = || {
            templates_shared(&templates)
                && near_memory_start(gap_start as u64, x as u64, rules)
                    .is_some_and(|memory| nothing_new(&units[memory as usize..gap_start], &units[gap_start..x]))
        };
        let prose = is_prose(&lines[k].content);
        let counted = k > 0 && list_counts_on(&lines[k - 1].content, &lines[k].content);
        let continues = lines[k].template.is_some()
            && match recurs_to {
                Some(j) => {
                    prose
                        || (counted
                            && copy_save_count(&lines[k].content, &lines[j].content)
                            && !is_data_line(&lines[k].content))
                }
                None => prose && near(),
            };
        // A streak line only counts toward holding when a newline ends it (streaming reads no other).
        if continues {
            streak.push(k);
            let mut distinct: Vec<u32> = streak.iter().map(|&i| numbers[i]).filter(|&n| n != 0).collect();
            distinct.sort_unstable();
            distinct.dedup();
            let all_prose = streak.iter().all(|&i| is_prose(&lines[i].content));
            if held.is_none()
                && terminated(&lines[k])
                && holds(rules, streak.len() as u64, distinct.len() as u64, all_prose)
            {
                held = Some(streak.len() - 1);
            }
        } else {
            finish(&streak, held, &lines, out);
            (streak, held) = (Vec::new(), None);
        }
    }
    finish(&streak, held, &lines, out);
}

/// Counts inside a line, read from the spec: every digit run; a number is one of at most
/// `MAX_DIGITS` digits with no ASCII letter or `_` on either side and a unit after it. Two
/// numbers in a row (no digit run between them) step when the second is one more and the text
/// between them (the separator) is at most `MAX_SEPARATOR` units with no newline. A count is a
/// maximal run of steps with one separator; it holds at the unit after its
/// `data_counter_min_lines`-th number, if twice that fits `max_long_period`.
fn counter_run_candidates(units: &[u32], rules: &Rules, out: &mut Vec<Candidate>) {
    let need = rules.data_counter_min_lines as usize;
    if 2 * need > rules.max_long_period as usize {
        return;
    }
    let digit = |u: u32| (u32::from(b'0')..=u32::from(b'9')).contains(&u);
    let name = |u: u32| u == u32::from(b'_') || char::from_u32(u).is_some_and(|c| c.is_ascii_alphabetic());
    let mut runs: Vec<(usize, usize)> = Vec::new();
    let mut i = 0;
    while i < units.len() {
        if digit(units[i]) {
            let start = i;
            while i < units.len() && digit(units[i]) {
                i += 1;
            }
            runs.push((start, i));
        } else {
            i += 1;
        }
    }
    let number = |(start, end): (usize, usize)| {
        (end < units.len() && end - start <= MAX_DIGITS && !(start > 0 && name(units[start - 1])) && !name(units[end]))
            .then(|| units[start..end].iter().fold(0, |value, &d| 10 * value + (d - u32::from(b'0'))))
    };
    let separator = |k: usize| &units[runs[k].1..runs[k + 1].0];
    // Runs `k` and `k + 1` step.
    let steps = |k: usize| {
        let (Some(a), Some(b)) = (number(runs[k]), number(runs[k + 1])) else { return false };
        let between = separator(k);
        b == a + 1 && between.len() <= MAX_SEPARATOR && !between.contains(&u32::from(b'\n'))
    };
    for first in 0..runs.len().saturating_sub(1) {
        let continues = |k: usize| steps(k) && separator(k) == separator(first);
        // A count starts where the step before, if any, has another separator.
        if !steps(first) || (first > 0 && continues(first - 1)) {
            continue;
        }
        let mut last = first + 1;
        while last + 1 < runs.len() && continues(last) {
            last += 1;
        }
        let numbers = last - first + 1;
        if numbers < need {
            continue;
        }
        let ends: Vec<u64> = (first + need - 1..=last).map(|k| runs[k].1 as u64 + 1).collect();
        let block = units[runs[first].0..runs[first + 1].0].to_vec();
        out.push(Candidate {
            finding: Finding {
                rule: Rule::CounterRun,
                period: block.len() as u64,
                block,
                start: runs[first].0 as u64,
                repeats: need as u64,
                detected_at: ends[0],
                end: ends[0],
            },
            anchor: runs[first].0 as u64,
            end: ends[ends.len() - 1],
            copies: numbers as u64,
            claim_steps: ends,
        });
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
    template_candidates(units, rules, &mut candidates);
    counter_run_candidates(units, rules, &mut candidates);
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
