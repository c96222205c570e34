//! The whole extent of a finding in a complete text. A streaming detector reports a region as
//! it stood when its rule first held; an offline scan has the whole text, so it reports where
//! the repetition stops and every copy it holds (and `trim` cuts by the same extent).

use crate::classes::is_whitespace;
use crate::counter_run::count_from;
use crate::counters::{counts_on, cycle_lines_of, is_data_line};
use crate::finding::{Finding, Rule};
use crate::lanes::Unit;
use crate::rules::Rules;
use crate::template_lines::{
    copy_save_count, digit_line, is_prose, list_counts_on, near_memory_start, nothing_new, template_of,
    templates_shared, DigitLine, LOOKBACK,
};

/// A region as far as it reaches in the whole text.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Extent {
    /// Where the repetition stops.
    pub end: u64,
    /// Full copies (lines) in the region.
    pub copies: u64,
    /// The text ends inside one more copy (or the periodic run stops inside one).
    pub partial: bool,
}

/// Sets each finding's `end` and `repeats` to its whole extent in `units` (found with `rules`).
pub(crate) fn complete<S: Unit>(units: &[S], rules: &Rules, findings: &mut [Finding]) {
    for finding in findings {
        let extent = extent(units, rules, finding);
        finding.end = extent.end;
        finding.repeats = extent.copies;
    }
}

/// [`complete`] for the findings of a whole `str` (decoded only when there are some, and not
/// at all if it is ASCII: its bytes are its code points).
pub(crate) fn complete_str(text: &str, rules: &Rules, findings: &mut [Finding]) {
    if findings.is_empty() {
        return;
    }
    if text.is_ascii() {
        complete(text.as_bytes(), rules, findings);
    } else {
        let units: Vec<u32> = text.chars().map(u32::from).collect();
        complete(&units, rules, findings);
    }
}

pub(crate) fn extent<S: Unit>(units: &[S], rules: &Rules, finding: &Finding) -> Extent {
    match finding.rule {
        Rule::PeriodicRun | Rule::LongBlock => periodic_extent(units, finding),
        Rule::IdenticalLines => lines_extent(units, finding),
        Rule::CounterLines => counter_extent(units, rules, finding),
        Rule::TemplateLines => {
            let ends = template_streak_ends(units, rules, finding);
            Extent { end: ends.last().copied().unwrap_or(finding.start), copies: ends.len() as u64, partial: false }
        }
        Rule::CounterRun => {
            let (numbers, end) = count_from(units, finding.start as usize, &mut Vec::new());
            Extent { end, copies: numbers, partial: false }
        }
    }
}

fn periodic_extent<S: Unit>(units: &[S], finding: &Finding) -> Extent {
    let p = finding.period as usize;
    let mut end = finding.detected_at as usize;
    // A slice of units at a time while the copies agree (a comparison of slices runs as a
    // memcmp), then unit by unit to where they stop.
    const STRIDE: usize = 256;
    while end + STRIDE <= units.len() && units[end..end + STRIDE] == units[end - p..end - p + STRIDE] {
        end += STRIDE;
    }
    while end < units.len() && units[end] == units[end - p] {
        end += 1;
    }
    let span = end as u64 - finding.start;
    Extent { end: end as u64, copies: span / finding.period, partial: span % finding.period != 0 }
}

/// A line of a text: where it starts, where its content ends (trailing whitespace dropped),
/// where it ends (after its newline), and whether a newline ends it.
#[derive(Clone, Copy, Debug)]
pub(crate) struct TextLine {
    pub start: usize,
    pub content_end: usize,
    pub end: usize,
    pub terminated: bool,
}

/// The lines of `units` from `from` on.
pub(crate) fn lines_from<S: Unit>(units: &[S], from: usize) -> impl Iterator<Item = TextLine> + '_ {
    let newline = S::store(u32::from(b'\n'));
    let mut at = from;
    std::iter::from_fn(move || {
        if at >= units.len() {
            return None;
        }
        let start = at;
        let (text_end, end, terminated) = match units[at..].iter().position(|&u| u == newline) {
            Some(i) => (start + i, start + i + 1, true),
            None => (units.len(), units.len(), false),
        };
        let mut content_end = text_end;
        while content_end > start && is_whitespace(units[content_end - 1].into()) {
            content_end -= 1;
        }
        at = end;
        Some(TextLine { start, content_end, end, terminated })
    })
}

/// The streak of lines equal to the finding's first line (blank lines between them allowed). A
/// last line the text ends in is a full copy if it equals the line, a partial one if it is
/// the start of it.
fn lines_extent<S: Unit>(units: &[S], finding: &Finding) -> Extent {
    let mut lines = lines_from(units, finding.start as usize);
    let first = lines.next().expect("a finding's first line exists");
    let content = &units[first.start..first.content_end];
    let mut extent = Extent { end: first.end as u64, copies: 1, partial: false };
    for line in lines {
        let text = &units[line.start..line.content_end];
        if text.is_empty() {
            continue;
        }
        if text == content {
            extent.copies += 1;
        } else if !line.terminated && content.starts_with(&units[line.start..line.end]) {
            extent.partial = true;
        } else {
            break;
        }
        extent.end = line.end as u64;
    }
    extent
}

/// The streak of counter lines from the finding's first line (blank lines between them
/// allowed), each line within `max_long_period` units as the detector reads them: the lines of
/// the first cycle, then each that steps on from the line a cycle before it, or equals it while
/// no cycle of lines in a row does. A last line the text ends in counts if it continues the
/// streak; no part of a line does (what a cut-short counter line would have been is not known).
fn counter_extent<S: Unit>(units: &[S], rules: &Rules, finding: &Finding) -> Extent {
    let cycle_lines = cycle_lines_of(&finding.block);
    let mut streak: Vec<&[S]> = Vec::new();
    let mut extent = Extent { end: finding.start, copies: 0, partial: false };
    let mut flat = 0;
    for line in lines_from(units, finding.start as usize) {
        if line.content_end == line.start {
            continue;
        }
        let text = &units[line.start..line.content_end];
        let fits = line.end - usize::from(line.terminated) - line.start <= rules.max_long_period as usize;
        if !fits {
            break;
        }
        if let Some(&before) = streak.len().checked_sub(cycle_lines).map(|at| &streak[at]) {
            if cycle_lines > 1 && before == text {
                flat += 1;
                if flat == cycle_lines {
                    break;
                }
            } else if counts_on(before, text, cycle_lines) {
                flat = 0;
            } else {
                break;
            }
        }
        streak.push(text);
        extent.copies += 1;
        extent.end = line.end as u64;
    }
    extent
}

/// Where each line of the finding's streak of template lines ends (after its newline, or the
/// text's end for a last line the text ends in that continues it), read as the rule reads: from
/// the [`LOOKBACK`] lines of the lookback ([`digit_line`]) before its first line on, each such
/// line from the first on continues the streak if it is numbered and either recurs by template
/// to one of the [`LOOKBACK`] such lines before it, being prose or an item of a counted list (a
/// copy of the latest line of its template save its first number, which counts on from the line
/// before it, and no data: [`list_counts_on`]), or is prose and a near-copy (two of them share a
/// template, and nothing in the text since the latest of them is new: [`nothing_new`]), and ends
/// it otherwise; a line indented as code with a digit ([`DigitLine::Code`]) ends it too; other
/// lines pass.
pub(crate) fn template_streak_ends<S: Unit>(units: &[S], rules: &Rules, finding: &Finding) -> Vec<u64> {
    let start = finding.start as usize;
    let from = lookback_start(units, rules, start);
    // The templates of the lookback's lines (`None`: no number), and their contents.
    let mut lookback: std::collections::VecDeque<Option<Vec<u32>>> = std::collections::VecDeque::new();
    let mut contents: std::collections::VecDeque<Vec<u32>> = std::collections::VecDeque::new();
    let mut ends = Vec::new();
    let mut template = Vec::new();
    // The end of the content of the latest line of the lookback: where the stretch a line closes
    // starts.
    let mut gap_start = from as u64;
    for line in lines_from(units, from) {
        let content = content_of(units, line.start, line.content_end);
        let x = (line.end - usize::from(line.terminated)) as u64;
        match digit_line(&content, line.end - usize::from(line.terminated) - line.start, rules) {
            Some(DigitLine::Remembered) => {}
            Some(DigitLine::Code) if line.start >= start => break,
            _ => continue,
        }
        let numbered = template_of(&content, &mut template);
        if line.start >= start {
            // The latest line of its template it recurs to.
            let recurs_to = lookback.iter().rposition(|other| other.as_ref() == Some(&template));
            let continues = numbered
                && if let Some(j) = recurs_to {
                    is_prose(&content)
                        || (copy_save_count(&content, &contents[j])
                            && !is_data_line(&content)
                            && list_counts_on(contents.back().expect("beside lookback"), &content))
                } else {
                    is_prose(&content)
                        && templates_shared(lookback.make_contiguous())
                        && near_memory_start(gap_start, x, rules).is_some_and(|memory| {
                            let (memory, gap) = (memory as usize, gap_start as usize);
                            nothing_new(&content_of(units, memory, gap), &content_of(units, gap, x as usize))
                        })
                };
            if continues {
                ends.push(line.end as u64);
            } else {
                break;
            }
        }
        gap_start = line.content_end as u64;
        lookback.push_back(numbered.then(|| template.clone()));
        contents.push_back(content);
        if lookback.len() > LOOKBACK {
            lookback.pop_front();
            contents.pop_front();
        }
    }
    ends
}

fn content_of<S: Unit>(units: &[S], start: usize, content_end: usize) -> Vec<u32> {
    units[start..content_end].iter().map(|&unit| unit.into()).collect()
}

/// Where the earliest of the [`LOOKBACK`] lines of the lookback ([`digit_line`]) before the
/// line at `start` starts (0 if there are fewer).
fn lookback_start<S: Unit>(units: &[S], rules: &Rules, start: usize) -> usize {
    let newline = S::store(u32::from(b'\n'));
    let mut line_end = start;
    let mut seen = 0;
    while line_end > 0 && seen < LOOKBACK {
        // The line ending at the newline before `line_end`.
        let line_start = units[..line_end - 1].iter().rposition(|&u| u == newline).map_or(0, |i| i + 1);
        let mut content_end = line_end - 1;
        while content_end > line_start && is_whitespace(units[content_end - 1].into()) {
            content_end -= 1;
        }
        let content = content_of(units, line_start, content_end);
        seen += usize::from(digit_line(&content, line_end - 1 - line_start, rules) == Some(DigitLine::Remembered));
        line_end = line_start;
    }
    line_end
}
