//! Trimming before persistence: every degenerate region keeps its first few copies and a marker
//! saying what was removed; everything else, before, between and after, is kept as it was.

use crate::detector::scan_stored;
use crate::finding::{Finding, Rule};
use crate::lanes::Unit;
use crate::rules::{is_whitespace, Rules};

/// One region that trimming shortened.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Removal {
    pub finding: Finding,
    /// Offset (in the input) where the removed part starts: after the kept copies.
    pub start: u64,
    /// Offset (in the input) where the repetition ends.
    pub end: u64,
    /// Copies (for `identical_lines`: lines) removed; a cut-short last copy counts as one.
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

/// Where a region ends and where its kept copies end, as offsets into `units`.
struct Extent {
    kept_end: u64,
    end: u64,
    removed_repeats: u64,
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
        let extent = match finding.rule {
            Rule::PeriodicRun | Rule::LongBlock => periodic_extent(units, &finding, keep),
            Rule::IdenticalLines => lines_extent(units, &finding, keep),
        };
        let start = extent.kept_end.max(cursor);
        if start >= extent.end {
            continue;
        }
        cursor = extent.end;
        removals.push(Removal { finding, start, end: extent.end, repeats: extent.removed_repeats });
    }
    removals
}

fn periodic_extent<S: Unit>(units: &[S], finding: &Finding, keep: u64) -> Extent {
    let p = finding.period as usize;
    let mut end = finding.detected_at as usize;
    while end < units.len() && units[end] == units[end - p] {
        end += 1;
    }
    let kept_end = finding.start.saturating_add(keep.saturating_mul(finding.period)).min(end as u64);
    let removed = end as u64 - kept_end;
    Extent { kept_end, end: end as u64, removed_repeats: removed.div_ceil(finding.period) }
}

/// Lines of `units` from `from`: (content start, content end without trailing whitespace, line
/// end including its newline, whether a newline ended it).
fn lines_from<S: Unit>(units: &[S], from: usize) -> impl Iterator<Item = (usize, usize, usize, bool)> + '_ {
    let mut at = from;
    std::iter::from_fn(move || {
        if at >= units.len() {
            return None;
        }
        let start = at;
        let newline = units[at..].iter().position(|&u| u.into() == u32::from('\n'));
        let (content_end, line_end, terminated) = match newline {
            Some(i) => (start + i, start + i + 1, true),
            None => (units.len(), units.len(), false),
        };
        let mut trimmed_end = content_end;
        while trimmed_end > start && is_whitespace(units[trimmed_end - 1].into()) {
            trimmed_end -= 1;
        }
        at = line_end;
        Some((start, trimmed_end, line_end, terminated))
    })
}

fn lines_extent<S: Unit>(units: &[S], finding: &Finding, keep: u64) -> Extent {
    let mut lines = lines_from(units, finding.start as usize);
    let (first_start, first_end, first_line_end, _) = lines.next().expect("a finding's first line exists");
    let content = &units[first_start..first_end];
    let (mut count, mut end, mut kept_end) = (1u64, first_line_end, first_line_end);
    for (start, trimmed_end, line_end, terminated) in lines {
        let line = &units[start..trimmed_end];
        if line.is_empty() {
            continue;
        }
        // An unterminated last line that starts like the repeated one is a copy cut short.
        let repeats = line == content || (!terminated && content.starts_with(&units[start..line_end]));
        if !repeats {
            break;
        }
        count += 1;
        end = line_end;
        if count <= keep {
            kept_end = line_end;
        }
    }
    let removed_repeats = count.saturating_sub(keep);
    Extent { kept_end: kept_end as u64, end: end as u64, removed_repeats }
}

/// The note left where units were removed, e.g.
/// `[loopbreak: removed 2040 units: "loadTools." repeated 204 more times (periodic_run)]`.
pub fn marker(removal: &Removal, more_follows: bool) -> String {
    const PREVIEW: usize = 60;
    let block = &removal.finding.block;
    // Quotes, backslashes and control chars escaped; a lone surrogate (no char) as `\u{d800}`.
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
            _ => preview.push_str(&format!("\\u{{{u:x}}}")),
        }
    }
    if block.len() > PREVIEW {
        preview.push('…');
    }
    let what = match removal.finding.rule {
        Rule::IdenticalLines => "lines",
        Rule::PeriodicRun | Rule::LongBlock => "times",
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
