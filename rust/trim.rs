//! Trimming before persistence: every degenerate region keeps its first few copies and a marker
//! saying what was removed; everything else, before, between and after, is kept as it was.

use crate::counter_run::count_from;
use crate::counters::cycle_lines_of;
use crate::detector::scan_stored;
use crate::extent::{extent, lines_from, template_streak_ends};
use crate::finding::{CopyUnit, Finding, Rule};
use crate::lanes::Unit;
use crate::rules::Rules;

/// One region that trimming shortened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub finding: Finding,
    /// Offset (in the input) where the removed part starts: after the kept copies.
    pub start: u64,
    /// Offset (in the input) where the repetition ends.
    pub end: u64,
    /// Copies (for `identical_lines` and `counter_lines`: lines) removed; a cut-short last copy
    /// counts as one.
    pub repeats: u64,
}

impl Removal {
    pub fn units(&self) -> u64 {
        self.end - self.start
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trimmed {
    pub units: Vec<u32>,
    pub removals: Vec<Removal>,
}

/// Copies of each repeated block that trimming keeps, unless told otherwise.
pub const DEFAULT_KEEP: u64 = 3;

/// Trims every finding of `rules` in `units`, keeping `keep` (at least 1) copies of each.
pub fn trim_units(units: &[u32], rules: &Rules, keep: u64) -> Trimmed {
    let removals = removals(units, rules, keep);
    let mut out = Vec::with_capacity(units.len());
    let mut cursor = 0;
    for removal in &removals {
        out.extend_from_slice(&units[cursor..removal.start as usize]);
        let more_follows = (removal.end as usize) < units.len();
        out.extend(marker(removal, more_follows).chars().map(u32::from));
        cursor = removal.end as usize;
    }
    out.extend_from_slice(&units[cursor..]);
    Trimmed { units: out, removals }
}

/// What [`trim_units`] removes from `units` (code points stored in one, two or four bytes
/// each), in order: the trimmed text is the units outside the removals, each removal replaced
/// by its [`marker`] (followed by a newline when more units follow).
pub(crate) fn removals<S: Unit>(units: &[S], rules: &Rules, keep: u64) -> Vec<Removal> {
    assert!(keep >= 1, "keep must be at least 1");
    let mut removals = Vec::new();
    let mut cursor = 0u64;
    for finding in scan_stored(units, rules) {
        let (kept_end, removed_repeats) = kept(units, rules, &finding, keep);
        let start = kept_end.max(cursor);
        if start >= finding.end {
            continue;
        }
        cursor = finding.end;
        let end = finding.end;
        removals.push(Removal { finding, start, end, repeats: removed_repeats });
    }
    removals
}

/// Where the first `keep` copies of a whole finding end, and how many copies (a cut-short last
/// one counting as one) come after them.
fn kept<S: Unit>(units: &[S], rules: &Rules, finding: &Finding, keep: u64) -> (u64, u64) {
    match finding.rule {
        Rule::PeriodicRun | Rule::LongBlock => {
            let kept_end = finding.start.saturating_add(keep.saturating_mul(finding.period)).min(finding.end);
            (kept_end, (finding.end - kept_end).div_ceil(finding.period))
        }
        Rule::IdenticalLines => kept_lines(units, rules, finding, keep),
        // A copy of a counter streak is a whole cycle of its lines.
        Rule::CounterLines => {
            kept_lines(units, rules, finding, keep.saturating_mul(cycle_lines_of(&finding.block) as u64))
        }
        // A copy is a line of the streak: the lines it passes over between them stay with it.
        Rule::TemplateLines => {
            let ends = template_streak_ends(units, rules, finding);
            let kept = keep.min(ends.len() as u64);
            let kept_end = kept.checked_sub(1).map_or(finding.start, |last| ends[last as usize]);
            (kept_end, ends.len() as u64 - kept)
        }
        // A copy is a number and the separator after it: the kept ones end where the next starts.
        Rule::CounterRun => {
            let mut starts = Vec::new();
            let (numbers, end) = count_from(units, finding.start as usize, &mut starts);
            let kept = keep.min(numbers);
            (starts.get(kept as usize).copied().unwrap_or(end), numbers - kept)
        }
    }
}

/// [`kept`] for a rule whose copies are lines: where the first `keep_lines` non-blank lines end,
/// and how many lines come after them.
fn kept_lines<S: Unit>(units: &[S], rules: &Rules, finding: &Finding, keep_lines: u64) -> (u64, u64) {
    let copies = lines_from(units, finding.start as usize)
        .take_while(|line| line.start < finding.end as usize)
        .filter(|line| line.content_end > line.start);
    let kept_end =
        copies.take(keep_lines.try_into().unwrap_or(usize::MAX)).last().map_or(finding.start, |line| line.end as u64);
    let all = extent(units, rules, finding);
    (kept_end, (all.copies + u64::from(all.partial)).saturating_sub(keep_lines))
}

/// The note left where units were removed, e.g.
/// `[loopbreak: removed 2040 units: "loadTools." repeated 204 more times (periodic_run)]`.
pub fn marker(removal: &Removal, more_follows: bool) -> String {
    const PREVIEW: usize = 60;
    let block = &removal.finding.block;
    // Quotes, backslashes and control chars escaped; a lone surrogate (no char) as `\ud800`, as
    // Python's repr (and so `loopbreak scan`'s findings) and JSON write it.
    let mut preview = String::new();
    for &u in block.iter().take(PREVIEW) {
        match char::from_u32(u) {
            Some('\n') => preview.push_str("\\n"),
            Some('\t') => preview.push_str("\\t"),
            Some(c @ ('"' | '\\')) => {
                preview.push('\\');
                preview.push(c);
            }
            Some(c) if !c.is_control() => preview.push(c),
            _ => preview.push_str(&format!("\\u{u:04x}")),
        }
    }
    if block.len() > PREVIEW {
        preview.push('…');
    }
    let what = match removal.finding.rule.info().copy {
        CopyUnit::Line => "lines",
        CopyUnit::Block => "times",
    };
    format!(
        "\n[loopbreak: removed {} units: \"{}\" repeated {} more {} ({})]{}",
        removal.units(),
        preview,
        removal.repeats,
        what,
        removal.finding.rule,
        if more_follows { "\n" } else { "" }
    )
}
