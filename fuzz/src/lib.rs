//! Invariant checks behind the fuzz targets of the loopbreak core.
//!
//! Each `check_*` function takes the raw fuzzer input, decodes it into a case, runs the core and
//! asserts the invariant (a failed assertion is a finding of the fuzzer, like a crash). The
//! targets in `fuzz_targets/` are one-line wrappers, so the kept corpus (`corpus/<target>/`) and
//! the reproducers of bugs (`regressions/<target>/`) replay with plain `cargo test` on stable
//! Rust (see `mod replay` at the end).
//!
//! - `check_chunking`: a generated text (loops, identical lines, noise; str or token ids) fed in
//!   arbitrary chunkings, one unit at a time, cloned and reset mid-stream: always the findings
//!   of one feed and of `scan_units` / `scan_str`.
//! - `check_scan`: raw bytes (lossy UTF-8 or token ids): `scan_str` == `scan_units` == a streamed
//!   detector, and every finding is sound (see `check_findings`).
//! - `check_trim`: `trim_units` keeps everything outside its removals exactly (the text before the
//!   first removal, between removals and after the last), removes only repetition, keeps `keep`
//!   copies, and leaves clean text unchanged.
//! - `check_rules`: arbitrary (mostly edge) rule values: `Rules::new` never panics; valid rules never
//!   make the detector panic, keep its state bounded and give sound findings.
//!
//! With the cargo feature `oracle` (which needs the core to export its reference oracle as
//! `loopbreak::oracle`), chunking and scan also compare with the oracle.

use arbitrary::Unstructured;
use loopbreak::{
    scan_str, scan_units, trim_units, BlockClass, Detector, Finding, Removal, Rule, RuleValues, Rules, TemplateClass,
    Trimmed, DEFAULT_RULES, PACKED_CONTEXT, SMALL_RULES,
};

/// The findings a detector fed `units` at once reports: each region as its rule first held.
pub fn stream(units: &[u32], rules: &Rules) -> Vec<Finding> {
    let mut detector = Detector::new(*rules);
    let mut out = Vec::new();
    detector.feed_units(units, &mut out);
    out
}

/// An offline scan reports the regions a stream reports, each whole: the same rule, block,
/// start and detection point; the stream's end is its detection point, the scan's where the
/// repetition stops, with at least the copies the stream saw.
pub fn check_whole(units: &[u32], held: &[Finding], whole: &[Finding]) {
    assert_eq!(held.len(), whole.len(), "scan and stream disagree on {}", show(units));
    for (h, w) in held.iter().zip(whole) {
        let key = |f: &Finding| (f.rule, f.period, f.block.clone(), f.start, f.detected_at);
        assert_eq!(key(h), key(w), "scan and stream disagree on {}", show(units));
        assert_eq!(h.end, h.detected_at, "a stream's end is its detection point: {}", show(units));
        assert!(w.end >= h.end && w.repeats >= h.repeats && w.end <= units.len() as u64, "{}", show(units));
    }
}

/// Generated texts stop growing at this many units (keeps a run in the millisecond range).
pub const MAX_UNITS: usize = 1 << 15;

/// A valid `Rules` must keep a stream's state (its window of units) below this many units
/// (128 MiB of `u32`): the largest span a rule can ask for is `2^24`.
pub const WINDOW_BOUND: usize = 1 << 25;

/// Whether inputs that hit an open bug (see `known_bugs`) are skipped.
pub const MASK_KNOWN_BUGS: bool = cfg!(feature = "mask-known-bugs");

/// About the least that `Rules::new` allows: a window of a few dozen units, so that lines and
/// runs longer than the window are cheap to generate.
pub const LOW: RuleValues = RuleValues {
    max_period: 3,
    max_long_period: 12,
    min_repeats: 2,
    text_span: 32,
    code_min_repeats: 2,
    code_span: 32,
    long_min_repeats: 2,
    min_span: 32,
    code_min_span: 32,
    single_char_min_span: 32,
    whitespace_min_span: 32,
    table_span: 32,
    min_lines: 2,
    code_min_lines: 2,
    counter_min_lines: 2,
    counter_span: 0,
    code_counter_min_lines: 2,
    code_counter_span: 0,
    data_counter_min_lines: 2,
    payload_span: 32,
    template_min_lines: 2,
};

/// Units texts are made of: letters, punctuation, digits, every kind of whitespace the rules
/// care about (`\r`, U+0085 and U+3000 are whitespace; a lone surrogate is not), NUL, multi-byte
/// chars, lone surrogates and a token id above U+10FFFF (the last three only as token ids).
const PALETTE: [u32; 24] = [
    'a' as u32,
    'b' as u32,
    'c' as u32,
    'x' as u32,
    'A' as u32,
    '.' as u32,
    ',' as u32,
    ' ' as u32,
    '\n' as u32,
    '\t' as u32,
    '\r' as u32,
    '-' as u32,
    '=' as u32,
    '0' as u32,
    '1' as u32,
    'é' as u32,
    '人' as u32,
    '🙂' as u32,
    0x3000,
    0x85,
    0,
    0xD800,
    0xDFFF,
    0x11_0000,
];

const NEWLINE: u32 = '\n' as u32;

// ---------------------------------------------------------------------------------------------
// Decoding fuzzer input into cases

fn byte(u: &mut Unstructured<'_>) -> u8 {
    u.arbitrary().unwrap_or(0)
}

fn below(u: &mut Unstructured<'_>, n: usize) -> usize {
    if n <= 1 {
        return 0;
    }
    u.int_in_range(0..=n - 1).unwrap_or(0)
}

/// A u32 that is usually an edge of some rule's range.
fn edge_u32(u: &mut Unstructured<'_>) -> u32 {
    const EDGES: [u32; 20] = [
        0,
        1,
        2,
        3,
        4,
        16,
        31,
        32,
        33,
        64,
        150,
        4096,
        65_535,
        65_536,
        65_537,
        1 << 24,
        (1 << 24) + 1,
        u32::MAX / 2,
        u32::MAX - 1,
        u32::MAX,
    ];
    match below(u, 6) {
        0 => below(u, 9) as u32,
        1 => below(u, 101) as u32,
        2 => below(u, 5001) as u32,
        3 | 4 => EDGES[below(u, EDGES.len())],
        _ => u.arbitrary().unwrap_or(0),
    }
}

/// Any combination of rule values, valid or not, mostly at the edges.
pub fn arbitrary_rules(u: &mut Unstructured<'_>) -> RuleValues {
    RuleValues::from_fn(|_| edge_u32(u))
}

/// Valid rules with a small window (cheap to run): a preset, or arbitrary small values.
fn small_valid_rules(u: &mut Unstructured<'_>) -> Rules {
    match below(u, 4) {
        0 => DEFAULT_RULES,
        1 => SMALL_RULES,
        2 => low_rules(),
        _ => {
            let mut field = |most: usize| 1 + below(u, most) as u32;
            let max_period = field(20);
            let long_min_repeats = 1 + field(6);
            let values = RuleValues {
                max_period,
                max_long_period: max_period + field(100) - 1,
                min_repeats: long_min_repeats + field(30) - 1,
                text_span: field(600),
                code_min_repeats: long_min_repeats + field(60) - 1,
                code_span: field(2000),
                long_min_repeats,
                min_span: 31 + field(100),
                code_min_span: 31 + field(600),
                single_char_min_span: 31 + field(600),
                whitespace_min_span: 31 + field(2500),
                table_span: field(3000),
                min_lines: 1 + field(40),
                code_min_lines: 1 + field(60),
                counter_min_lines: 1 + field(50),
                counter_span: field(2000),
                code_counter_min_lines: 1 + field(50),
                code_counter_span: field(2000),
                data_counter_min_lines: 1 + field(80),
                payload_span: 31 + field(3000),
                template_min_lines: 1 + field(20),
            };
            match Rules::new(values) {
                Ok(rules) if !(MASK_KNOWN_BUGS && known_bugs::span_outgrows_window(&rules)) => rules,
                _ => SMALL_RULES,
            }
        }
    }
}

/// A text made of pieces that reach the rules often: noise, a block repeated (maybe with a
/// glitch), identical lines (maybe with blank lines and trailing whitespace between them), raw
/// units. With `text`, only units that are chars (so it is also a `String`).
pub fn generate_units(u: &mut Unstructured<'_>, text: bool) -> Vec<u32> {
    let palette: Vec<u32> = PALETTE.iter().copied().filter(|&c| !text || char::from_u32(c).is_some()).collect();
    let alphabet: Vec<u32> = (0..1 + below(u, 6)).map(|_| palette[below(u, palette.len())]).collect();
    let pick = |u: &mut Unstructured<'_>| alphabet[below(u, alphabet.len())];
    let mut out: Vec<u32> = Vec::new();
    while !u.is_empty() && out.len() < MAX_UNITS {
        match below(u, 6) {
            0 => {
                for _ in 0..byte(u) {
                    out.push(pick(u));
                }
            }
            1 | 2 => {
                let block: Vec<u32> = (0..1 + below(u, 80)).map(|_| pick(u)).collect();
                let times = below(u, 1024);
                let glitch = below(u, 4) == 0;
                for _ in 0..times {
                    out.extend_from_slice(&block);
                    if glitch && below(u, 8) == 0 {
                        out.push(pick(u));
                    }
                    if out.len() >= MAX_UNITS {
                        break;
                    }
                }
            }
            3 => {
                let content: Vec<u32> = (0..below(u, 61)).map(|_| pick(u)).collect();
                let trailing = [' ' as u32, '\t' as u32, '\r' as u32, 0x3000];
                let times = below(u, 80);
                for _ in 0..times {
                    out.extend_from_slice(&content);
                    for _ in 0..below(u, 3) {
                        out.push(trailing[below(u, trailing.len())]);
                    }
                    out.push(NEWLINE);
                    if below(u, 6) == 0 {
                        out.push(NEWLINE);
                    }
                }
            }
            4 => {
                // Counter lines: a template, or a cycle of two to four (some without a number;
                // four is no counter), around a number that mostly counts up by one, line by
                // line or once a cycle; or, with no newline between the items, a count inside a
                // line.
                let cycle_lines = 1 + below(u, 4);
                let cycle: Vec<(Vec<u32>, Vec<u32>, bool)> = (0..cycle_lines)
                    .map(|_| {
                        let head = (0..below(u, 8)).map(|_| pick(u)).collect();
                        let tail = (0..below(u, 8)).map(|_| pick(u)).collect();
                        (head, tail, cycle_lines == 1 || below(u, 3) != 0)
                    })
                    .collect();
                let once_a_cycle = below(u, 2) == 0;
                let in_line = below(u, 3) == 0;
                let mut n = u64::from(byte(u)).saturating_mul([1, 1, 1_000_000_007, u64::MAX / 2][below(u, 4)]);
                for i in 0..below(u, 200) {
                    let (head, tail, numbered) = &cycle[i % cycle_lines];
                    out.extend_from_slice(head);
                    if *numbered {
                        out.extend(n.to_string().chars().map(u32::from));
                    }
                    out.extend_from_slice(tail);
                    if !in_line {
                        out.push(NEWLINE);
                    }
                    if !once_a_cycle || i % cycle_lines == cycle_lines - 1 {
                        n = n.saturating_add([1, 1, 1, 1, 1, 0, 2][below(u, 7)]);
                    }
                    if out.len() >= MAX_UNITS {
                        break;
                    }
                }
            }
            _ => {
                for _ in 0..byte(u) {
                    let raw: u32 = u.arbitrary().unwrap_or(0);
                    let unit =
                        if text { char::from_u32(raw % 0x11_0000).map_or('\u{FFFD}' as u32, u32::from) } else { raw };
                    out.push(unit);
                }
            }
        }
    }
    out.truncate(MAX_UNITS);
    out
}

fn to_string(units: &[u32]) -> String {
    units.iter().map(|&u| char::from_u32(u).expect("text units are chars")).collect()
}

fn show(units: &[u32]) -> String {
    let text: String = units.iter().take(300).map(|&u| char::from_u32(u).unwrap_or('\u{FFFD}')).collect();
    format!("{} units: {text:?}{}", units.len(), if units.len() > 300 { "…" } else { "" })
}

// ---------------------------------------------------------------------------------------------
// Open bugs: what each looks like, to skip it with `mask-known-bugs` while it is open.

/// Predicates of the open bugs, only used to mask them (`--features mask-known-bugs`). Their
/// reproducers are in `regressions/` and in `replay::handmade_cases`.
pub mod known_bugs {
    use super::*;

    /// bug-lines-window: an `identical_lines` finding whose line (content plus trailing
    /// whitespace) does not fit in the window reads units from outside it: a wrong `block`, or
    /// an index out of bounds panic in `Detector::units_back`.
    pub fn line_outgrows_window(units: &[u32], window: usize) -> bool {
        let lines: Vec<&[u32]> = units.split(|&u| u == NEWLINE).collect();
        let mut contents: Vec<&[u32]> = lines.iter().map(|line| trim_trailing_ws(line)).collect();
        contents.sort_unstable();
        let repeated = |c: &[u32]| contents.partition_point(|x| *x < c) + 1 < contents.partition_point(|x| *x <= c);
        lines.iter().any(|line| line.len() + 1 >= window && repeated(trim_trailing_ws(line)))
    }

    /// bug-span-window: a rule asks for a span longer than the window (the window is sized by
    /// the least span of each period, the finding's block is read from the first copy): a wrong
    /// `block` or an index out of bounds panic in `Detector::units_back`.
    pub fn span_outgrows_window(rules: &Rules) -> bool {
        let window = Detector::new(*rules).window_len() as u64;
        let p_max = rules.max_long_period.min(1 << 12);
        let classes = [BlockClass::Whitespace, BlockClass::SingleChar, BlockClass::Text, BlockClass::Code];
        (1..=p_max).any(|p| classes.iter().any(|&k| rules.required_span(p, k) + 2 > window))
    }

    /// bug-rules-window: valid rules whose window is huge (`long_min_repeats * max_long_period`
    /// up to 2^40 units): the first push allocates it and the process aborts.
    pub fn window_too_large(rules: &Rules) -> bool {
        Detector::new(*rules).window_len() > WINDOW_BOUND
    }

    /// bug-trim-keep-overflow: `finding.start + keep * finding.period` overflows u64 in
    /// `periodic_extent`: a panic with overflow checks, else the kept copies are removed too.
    pub fn keep_overflows(keep: u64) -> bool {
        keep > 1 << 32
    }
}

// ---------------------------------------------------------------------------------------------
// Invariants of findings

/// Whether a unit is whitespace for the rules (Rust's `char::is_whitespace`; no surrogate is).
fn is_ws(u: u32) -> bool {
    char::from_u32(u).is_some_and(char::is_whitespace)
}

/// How many lines of `units` are not blank.
fn non_blank_lines(units: &[u32]) -> u64 {
    units.split(|&u| u == NEWLINE).filter(|l| !trim_trailing_ws(l).is_empty()).count() as u64
}

fn trim_trailing_ws(line: &[u32]) -> &[u32] {
    let end = line.iter().rposition(|&u| !is_ws(u)).map_or(0, |i| i + 1);
    &line[..end]
}

fn is_primitive(block: &[u32]) -> bool {
    let p = block.len();
    !(1..p).any(|q| p % q == 0 && (q..p).all(|i| block[i] == block[i - q]))
}

/// Where a later finding may start (mirrors the core's `Finding::anchor`).
fn anchor(f: &Finding) -> u64 {
    match f.rule {
        Rule::IdenticalLines | Rule::CounterLines | Rule::TemplateLines | Rule::CounterRun => f.start,
        Rule::PeriodicRun | Rule::LongBlock => f.start + f.period,
    }
}

/// The numbers of a count in `units` from its first number at `start` up to `end`, as the fuzzer
/// reads the rule: digit runs split by one separator of 1-16 units with no newline or digit,
/// each run of 1-3 digits one more than the run before, the first run after no ASCII letter or
/// `_`, and the unit at `end - 1` (the one after the last run) neither a digit, a letter nor `_`.
/// `None` if the units are no such count.
fn count_numbers(units: &[u32], start: usize, end: usize) -> Option<(u64, Vec<u32>)> {
    let digit = |u: u32| (48..=57).contains(&u);
    let name = |u: u32| u == 95 || char::from_u32(u).is_some_and(|c| c.is_ascii_alphabetic());
    if (start > 0 && (digit(units[start - 1]) || name(units[start - 1]))) || !digit(units[start]) {
        return None;
    }
    let after = units[end - 1];
    if digit(after) || name(after) {
        return None;
    }
    let mut numbers = 0u64;
    let mut separator: Option<&[u32]> = None;
    let mut previous: Option<u32> = None;
    let mut at = start;
    while at < end - 1 {
        let run_end = (at..end).find(|&i| !digit(units[i])).unwrap_or(end);
        let value = units[at..run_end].iter().fold(0u32, |v, &d| v.saturating_mul(10).saturating_add(d - 48));
        if run_end - at > 3 || previous.is_some_and(|p| value != p + 1) {
            return None;
        }
        previous = Some(value);
        numbers += 1;
        if run_end == end - 1 {
            break;
        }
        let next = (run_end..end - 1).find(|&i| digit(units[i]))?;
        let between = &units[run_end..next];
        if between.len() > 16 || between.contains(&NEWLINE) || separator.is_some_and(|s| s != between) {
            return None;
        }
        separator = Some(between);
        at = next;
    }
    Some((numbers, separator?.to_vec()))
}

/// Whether the template rule remembers a line (newline excluded): content of 6 units or more
/// with an ASCII digit, no longer than `max_long_period` with its trailing whitespace, not
/// indented as code (a tab first, or four spaces).
fn remembered_line(line: &[u32], rules: &Rules) -> bool {
    read_line(line, rules) && !indented_as_code(trim_trailing_ws(line))
}

/// Whether the template rule reads a line at all (newline excluded): content of 6 units or more
/// with an ASCII digit, no longer than `max_long_period` with its trailing whitespace.
fn read_line(line: &[u32], rules: &Rules) -> bool {
    let content = trim_trailing_ws(line);
    content.len() >= 6 && line.len() <= rules.max_long_period as usize && content.iter().any(|&u| is_digit(u))
}

/// Whether content is indented as Markdown indents code: a tab first, or four spaces.
fn indented_as_code(content: &[u32]) -> bool {
    content.first() == Some(&u32::from(b'\t')) || content.starts_with(&[u32::from(b' '); 4])
}

/// Whether a line the template rule reads is indented as code: such a line ends a streak.
fn code_with_digit(line: &[u32], rules: &Rules) -> bool {
    read_line(line, rules) && indented_as_code(trim_trailing_ws(line))
}

/// A line's template as the template rule reads it (its numbers, runs of one to three ASCII
/// digits touching no letter and not after a decimal point, each masked), or `None` if it is no
/// numbered line: one the rule does not remember, or one without a number.
fn numbered_template(line: &[u32], rules: &Rules) -> Option<Vec<u32>> {
    if !remembered_line(line, rules) {
        return None;
    }
    let template = masked_numbers(trim_trailing_ws(line));
    template.contains(&u32::MAX).then_some(template)
}

/// `line` with each number (a run of one to three ASCII digits touching no letter, not after a
/// digit and a point: a fraction's digits are its own) masked.
fn masked_numbers(line: &[u32]) -> Vec<u32> {
    let letter = |u: u32| char::from_u32(u).is_some_and(char::is_alphabetic);
    let mut template = Vec::new();
    let mut i = 0;
    while i < line.len() {
        let run = i;
        while i < line.len() && is_digit(line[i]) {
            i += 1;
        }
        if run == i {
            template.push(line[i]);
            i += 1;
        } else if (run > 0 && letter(line[run - 1]))
            || (i < line.len() && letter(line[i]))
            || i - run > 3
            || (run >= 2 && line[run - 1] == u32::from(b'.') && is_digit(line[run - 2]))
        {
            template.extend_from_slice(&line[run..i]);
        } else {
            template.push(u32::MAX);
        }
    }
    template
}

/// Whether a numbered line ended at `x` that recurs to no line of `back` (the templates of the
/// 16 remembered lines before it) is a near-copy: two of them share a template, and every token
/// of the text from `gap_start` to `x` (whitespace-separated, numbers masked, stops, brackets,
/// quotes and emphasis stripped at both ends) is one of the 1,024 units' before `gap_start`,
/// where the stretch is 256 units at most and it and the 1,024 fit `max_long_period` units.
fn near_copy(units: &[u32], back: &[Option<Vec<u32>>], gap_start: usize, x: usize, rules: &Rules) -> bool {
    let numbered: Vec<&Vec<u32>> = back.iter().flatten().collect();
    let shared = numbered.iter().enumerate().any(|(i, a)| numbered[i + 1..].contains(a));
    let memory = gap_start.saturating_sub(1024);
    if !shared || x - gap_start > 256 || x - memory > rules.max_long_period as usize {
        return false;
    }
    let tokens = |text: &[u32]| -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        for line in text.split(|&u| u == NEWLINE) {
            let masked = masked_numbers(line);
            for token in masked.split(|&u| char::from_u32(u).is_some_and(char::is_whitespace)) {
                let edge = |u: &u32| char::from_u32(*u).is_some_and(|c| ".,;:!?()[]{}\"'*_`<>".contains(c));
                let lead = token.iter().take_while(|u| edge(u)).count();
                let trail = token[lead..].iter().rev().take_while(|u| edge(u)).count();
                if lead < token.len() - trail {
                    out.push(token[lead..token.len() - trail].to_vec());
                }
            }
        }
        out
    };
    let known = tokens(&units[memory..gap_start]);
    tokens(&units[gap_start..x]).iter().all(|token| known.contains(token))
}

fn is_digit(u: u32) -> bool {
    (u32::from(b'0')..=u32::from(b'9')).contains(&u)
}

/// A line with its digit runs masked (as one `0` each, other `0`s never occur masked), and its
/// numbers as digit strings with where each starts.
fn masked(line: &[u32]) -> (Vec<Option<u32>>, Vec<(Vec<u32>, usize)>) {
    let (mut template, mut numbers) = (Vec::new(), Vec::new());
    let mut i = 0;
    while i < line.len() {
        if is_digit(line[i]) {
            let end = i + line[i..].iter().take_while(|&&u| is_digit(u)).count();
            numbers.push((line[i..end].to_vec(), i));
            template.push(None);
            i = end;
        } else {
            template.push(Some(line[i]));
            i += 1;
        }
    }
    (template, numbers)
}

fn is_letter(u: u32) -> bool {
    char::from_u32(u).is_some_and(char::is_alphabetic)
}

/// Whether the number at `at` of `line` is a name's tail or an index: after `_` or `[`, or after
/// letters that are fewer than three, follow a digit or `_`, or hold a capital past their first.
fn names_something(line: &[u32], at: usize) -> bool {
    let letters = line[..at].iter().rev().take_while(|&&u| is_letter(u)).count();
    let word = &line[at - letters..at];
    let before_word = (at > letters).then(|| line[at - letters - 1]);
    let camel = word.iter().skip(1).any(|&u| char::from_u32(u).is_some_and(char::is_uppercase));
    match at.checked_sub(1).map(|b| line[b]) {
        Some(u) if u == u32::from(b'_') || u == u32::from(b'[') => true,
        Some(_) if letters > 0 => {
            letters < 3 || camel || before_word.is_some_and(|u| is_digit(u) || u == u32::from(b'_'))
        }
        _ => false,
    }
}

/// A digit string plus `step` (1 to 3), keeping its width unless the first digit carries.
fn plus(digits: &[u32], step: usize) -> Vec<u32> {
    let mut out = digits.to_vec();
    for _ in 0..step {
        out = plus_one(&out);
    }
    out
}

/// A digit string plus one, keeping its width unless it is all nines.
fn plus_one(digits: &[u32]) -> Vec<u32> {
    let mut out = digits.to_vec();
    for d in out.iter_mut().rev() {
        if *d == u32::from(b'9') {
            *d = u32::from(b'0');
        } else {
            *d += 1;
            return out;
        }
    }
    out.insert(0, u32::from(b'1'));
    out
}

/// Whether `after` steps on from `before`, the line `cycle_lines` non-blank lines before it (the
/// rule as `Rules::required_counter_lines` and the docs state it), written apart from the core's
/// reading: each number unchanged, one up or `cycle_lines` up (in a cycle, exactly one up).
fn counts_on(before: &[u32], after: &[u32], cycle_lines: usize) -> bool {
    // At most two units longer: two numbers that carry at once.
    if !(before.len()..=before.len() + 2).contains(&after.len()) {
        return false;
    }
    let ((t1, n1), (t2, n2)) = (masked(before), masked(after));
    if t1 != t2 {
        return false;
    }
    let mut advanced = false;
    let mut all_up = true;
    for ((a, at), (b, _)) in n1.iter().zip(&n2) {
        let up = [1, cycle_lines].into_iter().any(|step| *b == plus(a, step));
        if up {
            // In a cycle, one number at a time.
            if names_something(before, *at) || advanced && cycle_lines > 1 {
                return false;
            }
            advanced = true;
        } else if a != b {
            return false;
        } else {
            // A decimal's fraction (after a digit and `.`) stays while the number counts.
            let fraction = *at >= 2 && before[at - 1] == u32::from(b'.') && is_digit(before[at - 2]);
            all_up &= fraction;
        }
    }
    let letter = t1.iter().flatten().any(|&u| is_letter(u));
    advanced && (letter || all_up)
}

/// Counter lines a streak needs whose first cycle is `cycle` and whose next line (stepping on
/// from the first) is `stepped`; indentation does not count, a chat-template marker
/// (`<|name|>`) counts in the length and as nothing else. Data if a line is (a letter in fewer
/// than four of its visible units, a digit run one; a table row, starting with `|`; one name
/// of ASCII letters and digits) or a number of four digits or more steps; else code if a line
/// holds one of `()[]{}<>=;+`; else words.
fn counter_lines_needed(rules: &Rules, cycle: &[&[u32]], stepped: &[u32]) -> u64 {
    let (mut len, mut code, mut data) = (0, false, false);
    for line in cycle {
        let indent = line.iter().take_while(|&&u| is_ws(u)).count();
        let (template, _) = masked(&line[indent..]);
        len += template.len() as u64;
        let shown: String = template.iter().map(|u| u.and_then(char::from_u32).unwrap_or('0')).collect();
        let marker = in_chat_markers(&shown);
        let visible: Vec<char> =
            shown.chars().zip(&marker).filter(|&(c, &m)| !m && !c.is_whitespace()).map(|(c, _)| c).collect();
        let letters = visible.iter().filter(|c| c.is_alphabetic()).count();
        let content = &line[indent..];
        let name = !marker.contains(&true)
            && content.iter().all(|&u| char::from_u32(u).is_some_and(|c| c.is_ascii_alphanumeric()));
        if visible.is_empty() {
            continue;
        }
        if shown.starts_with('|') || name || 4 * letters < visible.len() {
            data = true;
        }
        code |= visible.iter().any(|&c| "()[]{}<>=;+".contains(c));
    }
    let (_, before) = masked(cycle[0]);
    let (_, after) = masked(stepped);
    let wide_step = before.iter().zip(&after).any(|((a, _), (b, _))| a != b && a.len() >= 4);
    let class = if data || wide_step {
        TemplateClass::Data
    } else if code {
        TemplateClass::Code
    } else {
        TemplateClass::Words
    };
    rules.required_counter_lines(len, cycle.len() as u64, class)
}

/// Which chars of `line` are inside a chat-template marker: `<|`, one or more ASCII letters,
/// digits or `_`, `|>`.
fn in_chat_markers(line: &str) -> Vec<bool> {
    let chars: Vec<char> = line.chars().collect();
    let mut inside = vec![false; chars.len()];
    let mut i = 0;
    while i + 1 < chars.len() {
        if chars[i] == '<' && chars[i + 1] == '|' {
            let name = chars[i + 2..].iter().take_while(|c| c.is_ascii_alphanumeric() || **c == '_').count();
            let end = i + 2 + name;
            if name > 0 && chars.get(end) == Some(&'|') && chars.get(end + 1) == Some(&'>') {
                inside[i..end + 2].iter_mut().for_each(|m| *m = true);
                i = end + 2;
                continue;
            }
        }
        i += 1;
    }
    inside
}

/// The lines of a counter streak from its first: the first cycle, then each line that steps on
/// from the line a cycle before or equals it (fewer than a cycle of equal lines in a row).
/// Asserts each line of `lines` (non-blank, trailing whitespace dropped) does.
fn assert_a_counter_streak(lines: &[&[u32]], cycle_lines: usize, what: &dyn Fn() -> String) {
    let mut flat = 0;
    for k in cycle_lines..lines.len() {
        let (before, line) = (lines[k - cycle_lines], lines[k]);
        if cycle_lines > 1 && before == line {
            flat += 1;
            assert!(flat < cycle_lines, "a cycle where no number changes: {}", what());
        } else {
            assert!(counts_on(before, line, cycle_lines), "a line that does not step on: {}", what());
            flat = 0;
        }
    }
}

/// Soundness of every finding of `units` under `rules`, without an oracle: each one is backed
/// by the text exactly as the rules say, at the first unit where its rule holds, at the real
/// start of its run or streak; they come in order and never overlap a previous one's claim.
pub fn check_findings(units: &[u32], rules: &Rules, window: usize, found: &[Finding]) {
    let n = units.len() as u64;
    for (i, f) in found.iter().enumerate() {
        let ctx = || format!("finding {i} {f:?} in {}", show(units));
        assert!(f.start < f.detected_at && f.detected_at <= n, "offsets out of range: {}", ctx());
        assert!(f.period >= 1, "{}", ctx());
        let (start, end, p) = (f.start as usize, f.detected_at as usize, f.period as usize);
        match f.rule {
            Rule::PeriodicRun | Rule::LongBlock => {
                assert!(f.period <= u64::from(rules.max_long_period), "period above max_long_period: {}", ctx());
                let short = f.period <= u64::from(rules.max_period);
                assert_eq!(short, f.rule == Rule::PeriodicRun, "rule does not match the period: {}", ctx());
                assert!(start + p <= end, "{}", ctx());
                assert_eq!(f.block, units[start..start + p], "block is not the first copy: {}", ctx());
                assert!((start + p..end).all(|j| units[j] == units[j - p]), "evidence is not periodic: {}", ctx());
                assert!(is_primitive(&f.block), "block is a power of a shorter one: {}", ctx());
                let before = &units[start.saturating_sub(PACKED_CONTEXT)..start];
                let class = BlockClass::of_run(&f.block, before);
                let need = rules.run_span(&f.block, class);
                assert_eq!(f.detected_at - f.start, need, "not where the rule first holds: {}", ctx());
                assert_eq!(f.repeats, need / f.period, "{}", ctx());
                assert!(start == 0 || units[start - 1] != units[start - 1 + p], "run starts earlier: {}", ctx());
            }
            Rule::IdenticalLines => {
                assert!(start == 0 || units[start - 1] == NEWLINE, "not at a line start: {}", ctx());
                assert_eq!(units[end - 1], NEWLINE, "not at a line end: {}", ctx());
                let lines: Vec<&[u32]> = units[start..end - 1].split(|&u| u == NEWLINE).collect();
                let content = trim_trailing_ws(lines[0]);
                assert!(!content.is_empty(), "first line blank: {}", ctx());
                assert!(!trim_trailing_ws(lines[lines.len() - 1]).is_empty(), "last line blank: {}", ctx());
                let mut copies = 0u64;
                for line in &lines {
                    let line = trim_trailing_ws(line);
                    assert!(line.is_empty() || line == content, "a different line inside: {}", ctx());
                    copies += u64::from(!line.is_empty());
                }
                assert_eq!(f.period, content.len() as u64, "{}", ctx());
                // The block is the tail of the latest line that the window still holds, behind
                // that line's trailing whitespace.
                let last = lines[lines.len() - 1];
                let room = (window - 1).saturating_sub(last.len() - trim_trailing_ws(last).len());
                let shown = &content[content.len() - content.len().min(room)..];
                assert_eq!(f.block, shown, "block is not the line (or its tail): {}", ctx());
                let need = rules.required_lines(BlockClass::of_line(content), content.len() as u64);
                assert_eq!((f.repeats, copies), (need, need), "not where the rule first holds: {}", ctx());
                // The streak starts here: the previous non-blank line (if any) differs.
                if start > 0 {
                    let before: Vec<&[u32]> = units[..start - 1].split(|&u| u == NEWLINE).collect();
                    let previous = before.iter().rev().map(|l| trim_trailing_ws(l)).find(|l| !l.is_empty());
                    assert!(previous != Some(content), "streak starts earlier: {}", ctx());
                }
            }
            Rule::CounterLines => {
                assert!(start == 0 || units[start - 1] == NEWLINE, "not at a line start: {}", ctx());
                assert_eq!(units[end - 1], NEWLINE, "not at a line end: {}", ctx());
                let fits = |line: &[u32]| line.len() <= rules.max_long_period as usize;
                let lines: Vec<&[u32]> = units[start..end - 1]
                    .split(|&u| u == NEWLINE)
                    .filter(|l| !trim_trailing_ws(l).is_empty())
                    .collect();
                assert!(lines.iter().all(|l| fits(l)), "a line longer than max_long_period: {}", ctx());
                let lines: Vec<&[u32]> = lines.into_iter().map(trim_trailing_ws).collect();
                // The block is the first cycle: its lines joined by newlines.
                let cycle_lines = 1 + f.block.iter().filter(|&&u| u == NEWLINE).count();
                assert!((1..=3).contains(&cycle_lines) && lines.len() > cycle_lines, "{}", ctx());
                assert_eq!(f.block, lines[..cycle_lines].join(&NEWLINE), "block is not the first cycle: {}", ctx());
                assert_eq!(f.period, f.block.len() as u64, "{}", ctx());
                assert_a_counter_streak(&lines, cycle_lines, &ctx);
                // It starts with a step, by the shortest cycle, at a line that does not repeat
                // the one before.
                assert!(counts_on(lines[0], lines[cycle_lines], cycle_lines), "{}", ctx());
                assert!(lines[cycle_lines - 1] != lines[cycle_lines], "a repeated line starts a streak: {}", ctx());
                assert!(
                    (1..cycle_lines).all(|q| !counts_on(lines[cycle_lines - q], lines[cycle_lines], q)),
                    "a shorter cycle steps on: {}",
                    ctx()
                );
                let need = counter_lines_needed(rules, &lines[..cycle_lines], lines[cycle_lines]);
                assert_eq!(f.repeats, need, "not where the rule first holds: {}", ctx());
                assert_eq!(lines.len() as u64, f.repeats, "{}", ctx());
                // Where a streak may start depends on the one before it (a line that breaks a
                // streak starts none), which the oracle comparison checks.
            }
            Rule::TemplateLines => {
                assert!(start == 0 || units[start - 1] == NEWLINE, "not at a line start: {}", ctx());
                assert_eq!(units[end - 1], NEWLINE, "not at a line end: {}", ctx());
                let first = units[start..].split(|&u| u == NEWLINE).next().unwrap_or(&[]);
                assert_eq!(f.block, trim_trailing_ws(first), "block is not the first line: {}", ctx());
                assert_eq!(f.period, f.block.len() as u64, "{}", ctx());
                assert!(f.repeats >= u64::from(rules.template_min_lines), "{}", ctx());
                // Each remembered line from the first to the holding one is numbered and recurs:
                // its template is among those of the 16 remembered lines before it; they are the
                // streak.
                let lines: Vec<&[u32]> = units[..end - 1].split(|&u| u == NEWLINE).collect();
                let mut offset = 0;
                let mut considered: Vec<Option<Vec<u32>>> = Vec::new();
                let mut streak = 0u64;
                // The end of the latest remembered line's content.
                let mut gap_start = 0;
                for line in lines {
                    assert!(
                        offset < start || !code_with_digit(line, rules),
                        "a line of code with a digit inside the streak: {}",
                        ctx()
                    );
                    if remembered_line(line, rules) {
                        let template = numbered_template(line, rules);
                        if offset >= start {
                            let back = &considered[considered.len().saturating_sub(16)..];
                            let x = offset + line.len();
                            assert!(
                                template.as_ref().is_some_and(|template| back.contains(&Some(template.clone())))
                                    || (template.is_some() && near_copy(units, back, gap_start, x, rules)),
                                "a line that is not numbered or does not recur: {}",
                                ctx()
                            );
                            streak += 1;
                        }
                        considered.push(template);
                        gap_start = offset + trim_trailing_ws(line).len();
                    }
                    offset += line.len() + 1;
                }
                assert_eq!(streak, f.repeats, "not the streak's lines: {}", ctx());
            }
            Rule::CounterRun => {
                let need = u64::from(rules.data_counter_min_lines);
                assert!(2 * need <= u64::from(rules.max_long_period), "the rule is off: {}", ctx());
                let (numbers, separator) =
                    count_numbers(units, start, end).unwrap_or_else(|| panic!("no count: {}", ctx()));
                assert_eq!((numbers, f.repeats), (need, need), "not where the rule first holds: {}", ctx());
                let first_len = (start..end).find(|&i| !(48..=57).contains(&units[i])).unwrap() - start;
                assert_eq!(f.block, [&units[start..start + first_len], &separator[..]].concat(), "{}", ctx());
                assert_eq!(f.period, f.block.len() as u64, "{}", ctx());
                // It starts here: no number one less stands before it behind the same separator.
                let before = start.checked_sub(separator.len()).filter(|&b| units[b..start] == separator[..]);
                if let Some(b) = before {
                    let run_start = units[..b].iter().rposition(|&u| !(48..=57).contains(&u)).map_or(0, |i| i + 1);
                    let earlier = (run_start < b).then(|| count_numbers(units, run_start, start + first_len + 1));
                    assert!(!matches!(earlier, Some(Some(_))), "count starts earlier: {}", ctx());
                }
            }
        }
        if i > 0 {
            let prev = &found[i - 1];
            assert!(prev.detected_at < f.detected_at, "findings out of order: {}", ctx());
            assert!(anchor(f) >= prev.detected_at, "overlaps the previous finding's claim: {}", ctx());
        }
    }
}

#[cfg(feature = "oracle")]
fn compare_with_oracle(units: &[u32], rules: &Rules, window: usize, found: &[Finding]) {
    let n = units.len() as u64;
    if n * n.min(u64::from(rules.max_long_period)) > 40_000_000 {
        return;
    }
    let mut expected = loopbreak::oracle::scan(units, rules);
    for f in &mut expected {
        match f.rule {
            // Documented: a line longer than the window is reported by the part of it the window
            // holds at the newline that completes the finding: the `window - 1` units before the
            // newline, less the line's trailing whitespace.
            Rule::IdenticalLines => {
                let newline = f.detected_at as usize - 1;
                let trailing = units[..newline].len() - trim_trailing_ws(&units[..newline]).len();
                let held = (window - 1).saturating_sub(trailing);
                if f.block.len() > held {
                    f.block.drain(..f.block.len() - held);
                }
            }
            // A block fits the window, and so does each line of a counter or template streak.
            Rule::PeriodicRun | Rule::LongBlock | Rule::CounterLines | Rule::TemplateLines | Rule::CounterRun => {}
        }
    }
    assert_eq!(found, expected, "detector != oracle on {}", show(units));
}

#[cfg(not(feature = "oracle"))]
fn compare_with_oracle(_: &[u32], _: &Rules, _: usize, _: &[Finding]) {}

fn feed_chunks(rules: &Rules, units: &[u32], cuts: &[usize]) -> (Vec<Finding>, Detector) {
    let mut detector = Detector::new(*rules);
    let mut out = Vec::new();
    let mut at = 0;
    let mut k = 0;
    while at < units.len() {
        let len = if cuts.is_empty() { units.len() } else { cuts[k % cuts.len()] };
        k += 1;
        let next = (at + len).min(units.len());
        let before = out.len();
        detector.feed_units(&units[at..next], &mut out);
        // A feed reports exactly the findings whose rule first held inside it.
        assert!(out[before..].iter().all(|f| f.detected_at > at as u64 && f.detected_at <= next as u64));
        at = next;
        if len == 0 && k > units.len() + cuts.len() {
            break; // only empty chunks: nothing more to learn
        }
    }
    if at < units.len() {
        detector.feed_units(&units[at..], &mut out);
    }
    (out, detector)
}

fn skip_for_open_bugs(units: &[u32], rules: &Rules) -> bool {
    MASK_KNOWN_BUGS
        && (known_bugs::line_outgrows_window(units, Detector::new(*rules).window_len())
            || known_bugs::span_outgrows_window(rules))
}

/// Streaming in any chunking equals one feed equals `scan`.
pub fn check_chunking(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let rules = small_valid_rules(&mut u);
    let text = below(&mut u, 2) == 0;
    let cuts: Vec<usize> = (0..below(&mut u, 17))
        .map(|_| match below(&mut u, 4) {
            0 => below(&mut u, 3),
            1 | 2 => below(&mut u, 32),
            _ => below(&mut u, 5000),
        })
        .collect();
    let units = generate_units(&mut u, text);
    if skip_for_open_bugs(&units, &rules) {
        return;
    }
    let whole = scan_units(&units, &rules);
    let held = stream(&units, &rules);
    check_whole(&units, &held, &whole);
    let (chunked, detector) = feed_chunks(&rules, &units, &cuts);
    assert_eq!(chunked, held, "chunking {cuts:?} changed the findings of {}", show(&units));
    assert_eq!(detector.units_seen(), units.len() as u64);
    assert_eq!(detector.finding(), held.first());

    let mut one = Detector::new(rules);
    let mut pushed = Vec::new();
    for &unit in &units {
        one.push(unit, &mut pushed);
    }
    assert_eq!(pushed, held, "one unit at a time: {}", show(&units));

    // A detector cloned mid-stream carries on exactly like the original; a reset one is new.
    let split = cuts.first().map_or(units.len() / 2, |&c| c.min(units.len()));
    let mut first = Detector::new(rules);
    let mut out = Vec::new();
    first.feed_units(&units[..split], &mut out);
    let mut second = first.clone();
    let mut out2 = out.clone();
    first.feed_units(&units[split..], &mut out);
    second.feed_units(&units[split..], &mut out2);
    assert_eq!((&out, &out2), (&held, &held), "clone at {split}: {}", show(&units));
    first.reset();
    let mut again = Vec::new();
    first.feed_units(&units, &mut again);
    assert_eq!(again, held, "after reset: {}", show(&units));

    if text {
        let s = to_string(&units);
        assert_eq!(scan_str(&s, &rules), whole, "scan_str != scan_units on {}", show(&units));
        let mut d = Detector::new(rules);
        let mut out = Vec::new();
        let bounds: Vec<usize> = s.char_indices().map(|(i, _)| i).chain([s.len()]).collect();
        let mut at = 0;
        for &cut in cuts.iter().cycle().take(if cuts.is_empty() { 0 } else { units.len() + cuts.len() }) {
            let next = (at + cut).min(units.len());
            d.feed_str(&s[bounds[at]..bounds[next]], &mut out);
            at = next;
        }
        d.feed_str(&s[bounds[at]..], &mut out);
        assert_eq!(out, held, "feed_str in chunks {cuts:?}: {}", show(&units));
    }
    check_findings(&units, &rules, detector.window_len(), &held);
    compare_with_oracle(&units, &rules, detector.window_len(), &whole);
}

/// [`LOW`], checked.
pub fn low_rules() -> Rules {
    Rules::new(LOW).expect("LOW is valid")
}

/// Raw bytes as text (lossy UTF-8) or as token ids: `scan_str`, `scan_units` and a streamed
/// detector agree, and the findings are sound.
pub fn check_scan(data: &[u8]) {
    let Some((&head, rest)) = data.split_first() else {
        return;
    };
    let rules = [DEFAULT_RULES, SMALL_RULES, low_rules()][usize::from(head % 3)];
    let (units, text): (Vec<u32>, Option<String>) = match (head / 3) % 3 {
        0 => {
            let s = String::from_utf8_lossy(rest).into_owned();
            (s.chars().map(u32::from).collect(), Some(s))
        }
        // Token ids: small ones (16-bit, many repeats) and any u32.
        1 => (rest.chunks(2).map(|c| u32::from(c[0]) | u32::from(*c.get(1).unwrap_or(&0)) << 8).collect(), None),
        _ => (rest.chunks(4).map(|c| c.iter().rev().fold(0u32, |acc, &b| acc << 8 | u32::from(b))).collect(), None),
    };
    if skip_for_open_bugs(&units, &rules) {
        return;
    }
    let found = scan_units(&units, &rules);
    if let Some(s) = &text {
        assert_eq!(scan_str(s, &rules), found, "scan_str != scan_units on {}", show(&units));
    }
    let mut detector = Detector::new(rules);
    let mut streamed = Vec::new();
    for chunk in units.chunks(7) {
        detector.feed_units(chunk, &mut streamed);
    }
    check_whole(&units, &streamed, &found);
    check_findings(&units, &rules, detector.window_len(), &streamed);
    compare_with_oracle(&units, &rules, detector.window_len(), &found);
}

/// The marker `trim_units` leaves where it removed units (its format is the core's; this check
/// is about everything around it).
pub fn expected_marker(removal: &Removal, more_follows: bool) -> Vec<u32> {
    loopbreak::marker(removal, more_follows).chars().map(u32::from).collect()
}

/// `trim_units(units, rules, keep)` keeps every unit outside its removals, in place; each
/// removal is repetition only, after `keep` kept copies, up to where the repetition ends; clean
/// text comes back unchanged.
pub fn check_trimmed(units: &[u32], rules: &Rules, keep: u64, trimmed: &Trimmed) {
    let n = units.len();
    let found = scan_units(units, rules);
    let ctx = |what: &str| format!("{what}: keep={keep}, {} -> {}", show(units), show(&trimmed.units));
    if found.is_empty() {
        assert_eq!(trimmed.units, units, "{}", ctx("clean text changed"));
    }
    let mut expected = Vec::with_capacity(n);
    let mut cursor = 0usize;
    let mut findings = found.iter();
    for r in &trimmed.removals {
        let f = &r.finding;
        assert!(findings.any(|g| g == f), "{}", ctx("a removal's finding is not one of scan's, in order"));
        let (start, end, p) = (r.start as usize, r.end as usize, f.period as usize);
        assert!(cursor <= start && start < end && end <= n, "{}", ctx("removals overlap or out of range"));
        assert!(r.end >= f.detected_at, "{}", ctx("removal ends before the evidence"));
        match f.rule {
            Rule::PeriodicRun | Rule::LongBlock => {
                let kept_end = u128::from(f.start) + u128::from(keep) * u128::from(f.period);
                assert!(u128::from(r.start) >= kept_end, "{}", ctx("fewer than `keep` copies kept"));
                assert!((start..end).all(|i| units[i] == units[i - p]), "{}", ctx("removed a non-repeat"));
                assert!(end == n || units[end] != units[end - p], "{}", ctx("repetition left after the removal"));
                assert_eq!(r.repeats, (r.end - r.start).div_ceil(f.period), "{}", ctx("repeats"));
            }
            Rule::IdenticalLines => {
                let first = units[f.start as usize..].split(|&u| u == NEWLINE).next().unwrap_or(&[]);
                let content = trim_trailing_ws(first);
                let kept = non_blank_lines(&units[f.start as usize..start]);
                assert!(kept >= keep, "{}", ctx("fewer than `keep` lines kept"));
                assert!(start == 0 || units[start - 1] == NEWLINE, "{}", ctx("removal not at a line start"));
                let removed: Vec<&[u32]> = units[start..end].split(|&u| u == NEWLINE).collect();
                let terminated = units[end - 1] == NEWLINE;
                for (k, line) in removed.iter().enumerate() {
                    let last = k + 1 == removed.len();
                    if last && terminated {
                        assert!(line.is_empty());
                        continue;
                    }
                    let line_ok = trim_trailing_ws(line).is_empty()
                        || trim_trailing_ws(line) == content
                        || (last && !terminated && end == n && content.starts_with(line));
                    assert!(line_ok, "{}", ctx("removed a different line"));
                }
                assert!(r.repeats >= 1, "{}", ctx("repeats"));
            }
            Rule::CounterLines => {
                // A copy is a cycle of lines.
                let cycle_lines = 1 + f.block.iter().filter(|&&u| u == NEWLINE).count();
                let kept = non_blank_lines(&units[f.start as usize..start]);
                assert!(
                    u128::from(kept) >= u128::from(keep) * cycle_lines as u128,
                    "{}",
                    ctx("fewer than `keep` cycles kept")
                );
                assert!(start == 0 || units[start - 1] == NEWLINE, "{}", ctx("removal not at a line start"));
                let lines = || {
                    units[f.start as usize..end].split(|&u| u == NEWLINE).filter(|l| !trim_trailing_ws(l).is_empty())
                };
                let removed = lines().count() as u64 - kept;
                assert_eq!(r.repeats, removed, "{}", ctx("repeats"));
                let all: Vec<&[u32]> = lines().map(trim_trailing_ws).collect();
                assert_a_counter_streak(&all, cycle_lines, &|| ctx("removed a line that does not step on"));
            }
            Rule::TemplateLines => {
                // At a line start, after the first `keep` numbered lines of the streak.
                assert!(start == 0 || units[start - 1] == NEWLINE, "{}", ctx("removal not at a line start"));
                let kept = units[f.start as usize..start]
                    .split(|&u| u == NEWLINE)
                    .filter(|line| numbered_template(line, rules).is_some())
                    .count() as u64;
                assert!(kept >= keep.min(f.repeats), "{}", ctx("fewer than `keep` lines kept"));
            }
            Rule::CounterRun => {
                // After the first `keep` numbers, at the start of the next; what is removed counts
                // on to the region's end.
                let digit = |u: &u32| (48..=57).contains(u);
                let kept = units[f.start as usize..start].split(|u| !digit(u)).filter(|run| !run.is_empty()).count();
                assert!(kept as u64 == keep && digit(&units[start]), "{}", ctx("not `keep` numbers kept"));
                let (all, _) = count_numbers(units, f.start as usize, end)
                    .unwrap_or_else(|| panic!("{}", ctx("the region is no count")));
                assert_eq!((all, r.repeats), (f.repeats, f.repeats - keep), "{}", ctx("repeats"));
            }
        }
        expected.extend_from_slice(&units[cursor..start]);
        expected.extend(expected_marker(r, end < n));
        cursor = end;
    }
    expected.extend_from_slice(&units[cursor..]);
    assert!(trimmed.units == expected, "{}", ctx("the text outside the removals is not kept exactly"));
}

fn arbitrary_keep(u: &mut Unstructured<'_>) -> u64 {
    let keep = match below(u, 6) {
        0..=2 => 1 + below(u, 5) as u64,
        3 => 1 + u64::from(byte(u)),
        4 => [1 << 32, 1 << 62, 1 << 63, u64::MAX / 3, u64::MAX - 1, u64::MAX][below(u, 6)],
        _ => u.arbitrary::<u64>().unwrap_or(1).max(1),
    };
    if MASK_KNOWN_BUGS && known_bugs::keep_overflows(keep) {
        1 + keep % 7
    } else {
        keep
    }
}

/// `trim_units` keeps the clean text: see `check_trimmed`.
pub fn check_trim(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let rules = small_valid_rules(&mut u);
    let keep = arbitrary_keep(&mut u);
    let text = below(&mut u, 2) == 0;
    let units = generate_units(&mut u, text);
    if skip_for_open_bugs(&units, &rules) {
        return;
    }
    let trimmed = trim_units(&units, &rules, keep);
    check_trimmed(&units, &rules, keep, &trimmed);
}

/// Arbitrary rule values: `Rules::new` never panics and explains a refusal; valid rules keep the
/// window bounded, and the detector fed a generated text and the longest run the rules ask for
/// never panics and reports sound findings.
pub fn check_rules(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let rules = match Rules::new(arbitrary_rules(&mut u)) {
        Ok(rules) => rules,
        Err(error) => {
            assert!(!error.0.is_empty() && !error.to_string().is_empty());
            return;
        }
    };
    let detector = Detector::new(rules);
    let window = detector.window_len();
    if MASK_KNOWN_BUGS && known_bugs::window_too_large(&rules) {
        return;
    }
    assert!(window <= WINDOW_BOUND, "valid rules need a window of {window} units: {rules:?}");
    for p in [1, 2, rules.max_period, rules.max_period + 1, rules.max_long_period] {
        for class in [BlockClass::Whitespace, BlockClass::SingleChar, BlockClass::Text, BlockClass::Code] {
            let span = rules.required_span(p, class);
            assert!(span >= u64::from(p) * 2 && span >= 32, "span {span} for period {p} {class:?}: {rules:?}");
            let _ = rules.least_required_span(p);
            let _ = rules.required_lines(class, u64::from(p));
        }
    }
    let text = below(&mut u, 2) == 0;
    let units = generate_units(&mut u, text);
    let mut runs: Vec<Vec<u32>> = vec![units];
    // The longest span one of these blocks needs, if it is affordable.
    for block in [" ", "-", "ab", "0,", "- - ", "the cat sat "] {
        let block: Vec<u32> = block.chars().map(u32::from).collect();
        let need = rules.run_span(&block, BlockClass::of(&block)) as usize;
        let masked = MASK_KNOWN_BUGS && need + 2 > window;
        if need <= 1 << 18 && !masked {
            let mut run = vec!['x' as u32];
            while run.len() < need + 2 * block.len() + 1 {
                run.extend_from_slice(&block);
            }
            runs.push(run);
        }
    }
    for units in runs {
        if MASK_KNOWN_BUGS && known_bugs::line_outgrows_window(&units, window) {
            continue;
        }
        let found = stream(&units, &rules);
        check_findings(&units, &rules, window, &found);
    }
}

// ---------------------------------------------------------------------------------------------
// Replay of the kept corpus and of the bug reproducers, with stable Rust.

#[cfg(test)]
mod replay {
    use std::panic::{catch_unwind, AssertUnwindSafe};
    use std::path::{Path, PathBuf};

    type Check = fn(&[u8]);
    /// A named reproducer that panics if its check fails.
    type Case = (&'static str, Box<dyn Fn()>);

    const TARGETS: [(&str, Check); 4] = [
        ("chunking", super::check_chunking),
        ("scan", super::check_scan),
        ("trim", super::check_trim),
        ("rules", super::check_rules),
    ];

    /// Bugs found by fuzzing and still open: their reproducers (`regressions/<target>/<bug>-*`)
    /// must still fail. When one passes, the bug is fixed: remove it from this list (the file
    /// then replays as a normal regression case that must pass).
    const OPEN_BUGS: [&str; 0] = [];

    /// Reproducers written by hand (the fuzzer finds these too, but not in a few seconds), by
    /// the same checks the targets run.
    fn handmade_cases() -> Vec<Case> {
        use super::*;
        fn units(s: &str) -> Vec<u32> {
            s.chars().map(u32::from).collect()
        }
        fn scan_checked(text: &[u32], rules: Rules) {
            let found = stream(text, &rules);
            check_findings(text, &rules, Detector::new(rules).window_len(), &found);
        }
        vec![
            // 25 identical 20,000-unit lines with one trailing space, at the defaults.
            (
                "bug-lines-window-defaults",
                Box::new(|| {
                    let line: String = (0..20_000u32).map(|i| char::from(b'a' + (i * 7 % 26) as u8)).collect();
                    scan_checked(&units(&format!("{line} \n").repeat(25)), DEFAULT_RULES);
                }),
            ),
            // A 5-unit block of one visible char needs 200 units: more than LOW's window.
            (
                "bug-span-window-single-char",
                Box::new(|| {
                    let rules = Rules::new(RuleValues { single_char_min_span: 200, ..LOW }).unwrap();
                    scan_checked(&units(&format!("x{}", "-    ".repeat(50))), rules);
                }),
            ),
            (
                "bug-span-window-whitespace",
                Box::new(|| {
                    let rules = Rules::new(RuleValues { whitespace_min_span: 200, ..LOW }).unwrap();
                    scan_checked(&units(&format!("x{}", " ".repeat(210))), rules);
                }),
            ),
            // Rules whose window would be 2^40 units (the first push aborted the process): now
            // rejected by `Rules::new`.
            (
                "bug-rules-window-2-40",
                Box::new(|| {
                    let m = 1 << 24;
                    let values = RuleValues {
                        max_long_period: 65_536,
                        long_min_repeats: m,
                        min_repeats: m,
                        code_min_repeats: m,
                        ..*DEFAULT_RULES
                    };
                    assert!(Rules::new(values).is_err(), "rules with a 2^40-unit window must be rejected");
                }),
            ),
            // keep * period wraps: keep=2^62, period 4.
            (
                "bug-trim-keep-overflow-abc",
                Box::new(|| {
                    let text = units(&"abc ".repeat(100));
                    let keep = 1 << 62;
                    check_trimmed(&text, &DEFAULT_RULES, keep, &trim_units(&text, &DEFAULT_RULES, keep));
                }),
            ),
        ]
    }

    fn message(panic: Box<dyn std::any::Any + Send>) -> String {
        panic
            .downcast_ref::<String>()
            .cloned()
            .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
            .unwrap_or_default()
    }

    /// Whether a reproducer's outcome is the expected one; prints how open bugs still fail.
    fn judge(name: &str, result: Result<(), String>, problems: &mut Vec<String>) {
        let open = OPEN_BUGS.iter().find(|bug| name.starts_with(*bug));
        match (open, result) {
            (None, Ok(())) => {}
            (Some(_), Err(message)) => eprintln!("open bug, still fails as expected: {name}: {message:.300}"),
            (Some(bug), Ok(())) => {
                problems.push(format!("{name}: passes, so {bug} looks fixed: remove it from OPEN_BUGS"))
            }
            (None, Err(message)) => problems.push(format!("{name}: regression: {message:.600}")),
        }
    }

    fn files(dir: &Path) -> Vec<PathBuf> {
        let mut files: Vec<PathBuf> = match std::fs::read_dir(dir) {
            Ok(entries) => entries.map(|e| e.expect("readable dir").path()).filter(|p| p.is_file()).collect(),
            Err(_) => Vec::new(),
        };
        files.sort();
        files
    }

    fn replays(dir: &str, check: Check) -> Vec<(PathBuf, Result<(), String>)> {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        files(&root.join(dir))
            .into_iter()
            .map(|path| {
                let data = std::fs::read(&path).expect("readable corpus file");
                let result = catch_unwind(AssertUnwindSafe(|| check(&data))).map_err(message);
                (path, result)
            })
            .collect()
    }

    #[test]
    fn corpus_replays_clean() {
        let mut count = 0;
        let mut failures = Vec::new();
        for (target, check) in TARGETS {
            let results = replays(&format!("corpus/{target}"), check);
            assert!(!results.is_empty(), "no corpus for {target}");
            count += results.len();
            for (path, result) in results {
                if let Err(message) = result {
                    failures.push(format!("{}: {message:.600}", path.display()));
                }
            }
        }
        assert!(failures.is_empty(), "{} of {count} corpus files fail:\n{}", failures.len(), failures.join("\n"));
    }

    #[test]
    fn bug_reproducers_fail_exactly_while_their_bug_is_open() {
        let mut problems = Vec::new();
        for (target, check) in TARGETS {
            for (path, result) in replays(&format!("regressions/{target}"), check) {
                judge(&path.file_name().unwrap().to_string_lossy(), result, &mut problems);
            }
        }
        for (name, case) in handmade_cases() {
            judge(name, catch_unwind(AssertUnwindSafe(case)).map_err(message), &mut problems);
        }
        assert!(problems.is_empty(), "{}", problems.join("\n"));
    }
}
