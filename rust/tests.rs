//! Tests of the whole core: the detector against the oracle, chunking, and the rules on real
//! shapes of loops and of normal text.

use crate::oracle;
use crate::{
    scan_str, scan_units, trim_units, Detector, Finding, Rule, RuleValues, Rules, DEFAULT_RULES, SMALL_RULES,
    TOKEN_RULES,
};

struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn units(s: &str) -> Vec<u32> {
    s.chars().map(u32::from).collect()
}

/// Random texts with loops spliced in: noise, then copies of a random block (sometimes with a
/// glitch), then noise, a few times over.
fn random_text(rng: &mut Rng) -> Vec<u32> {
    random_text_over(rng, &ALPHABETS)
}

/// Units are stored as narrow as they fit: the last two alphabets make the window widen
/// mid-stream (from 8 to 16 bits for 人, and to 32 bits for U+1F600, directly or after 人).
const ALPHABETS: [&str; 6] = ["ab", "ab \n", "a-\n ", "xyz.\n\n", "aé 人\n", "a人\u{1F600} \n"];
const WIDE_ALPHABETS: [&str; 2] = [ALPHABETS[4], ALPHABETS[5]];
const NARROW_ALPHABETS: [&str; 4] = [ALPHABETS[0], ALPHABETS[1], ALPHABETS[2], ALPHABETS[3]];

/// [`random_text`] over one of `alphabets`.
fn random_text_over(rng: &mut Rng, alphabets: &[&str]) -> Vec<u32> {
    let alphabet = units(alphabets[rng.below(alphabets.len())]);
    let mut text = Vec::new();
    for _ in 0..1 + rng.below(4) {
        for _ in 0..rng.below(30) {
            text.push(alphabet[rng.below(alphabet.len())]);
        }
        let block: Vec<u32> = (0..1 + rng.below(45)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        for _ in 0..rng.below(12) {
            text.extend_from_slice(&block);
            if rng.below(8) == 0 {
                text.push(alphabet[rng.below(alphabet.len())]);
            }
        }
    }
    text
}

fn feed_in_chunks(text: &[u32], rules: &Rules, rng: &mut Rng) -> Vec<Finding> {
    let mut detector = Detector::new(*rules);
    let mut out = Vec::new();
    let mut at = 0;
    while at < text.len() {
        let len = (1 + rng.below(9)).min(text.len() - at);
        detector.feed_units(&text[at..at + len], &mut out);
        at += len;
    }
    out
}

/// Runs `check` with each build of the detector's loop this CPU can run: the baseline one
/// (16 periods per group), and the AVX2 one (32) where the CPU has AVX2.
fn with_each_build(check: impl Fn()) {
    for baseline in [false, true] {
        crate::state::BASELINE_BUILD.with(|forced| forced.set(baseline));
        check();
    }
    crate::state::BASELINE_BUILD.with(|forced| forced.set(false));
}

#[test]
fn detector_agrees_with_oracle_on_random_texts() {
    with_each_build(agrees_with_oracle_on_random_texts);
}

fn agrees_with_oracle_on_random_texts() {
    let mut rng = Rng(0x5EED);
    let mut found = 0;
    for case in 0..4000 {
        let text = random_text(&mut rng);
        let expected = oracle::scan(&text, &SMALL_RULES);
        let got = scan_units(&text, &SMALL_RULES);
        let shown: String = text.iter().filter_map(|&u| char::from_u32(u)).collect();
        assert_eq!(got, expected, "case {case}: {shown:?}");
        assert_eq!(
            feed_in_chunks(&text, &SMALL_RULES, &mut rng),
            oracle::first_held(&text, &SMALL_RULES),
            "chunked, case {case}"
        );
        found += expected.len();
    }
    assert!(found > 1000, "random texts should reach the rules often, found {found}");
}

#[test]
fn detector_agrees_with_oracle_when_the_window_narrows_again() {
    with_each_build(agrees_with_oracle_when_the_window_narrows_again);
}

fn agrees_with_oracle_when_the_window_narrows_again() {
    // Stretches of wide units between stretches of ASCII long enough (over four windows of the
    // small rules) for the window to go back to bytes, mid-run and mid-line.
    let mut rng = Rng(0xA5CE);
    let mut found = 0;
    for case in 0..60 {
        let mut text = Vec::new();
        for _ in 0..3 {
            text.extend(random_text_over(&mut rng, &WIDE_ALPHABETS));
            let narrow_from = text.len();
            while text.len() - narrow_from < 3000 {
                text.extend(random_text_over(&mut rng, &NARROW_ALPHABETS));
            }
        }
        let expected = oracle::scan(&text, &SMALL_RULES);
        assert_eq!(scan_units(&text, &SMALL_RULES), expected, "case {case}");
        assert_eq!(
            feed_in_chunks(&text, &SMALL_RULES, &mut rng),
            oracle::first_held(&text, &SMALL_RULES),
            "chunked, case {case}"
        );
        found += expected.len();
    }
    assert!(found > 100, "the texts should reach the rules often, found {found}");
}

#[test]
fn a_widened_window_narrows_once_wide_units_stop() {
    let mut detector = Detector::new(DEFAULT_RULES);
    let mut out = Vec::new();
    let lines = |from: usize, to: usize| -> String {
        // Numbers that do not count up line by line (which would be a `counter_lines` loop), in
        // sentences that differ in a word over 40 lines (one sentence with its number changing
        // line after line would be a `template_lines` loop).
        const WORDS: [&str; 8] = ["ordinary", "plain", "common", "usual", "simple", "regular", "normal", "daily"];
        const OTHERS: [&str; 5] = ["vary", "change", "differ", "shift", "move"];
        (from..to)
            .map(|i| {
                format!("Line {} of some {} text, with words that {}.\n", i * 7 % 1000, WORDS[i % 8], OTHERS[i % 5])
            })
            .collect()
    };
    detector.feed_str(&lines(0, 100), &mut out);
    let bytes = detector.heap_bytes();
    detector.feed_str("🙂\n", &mut out);
    assert!(detector.heap_bytes() > 3 * bytes, "widened: {}", detector.heap_bytes());
    // Narrowed once four windows' worth of units (~64K at the defaults) came without one.
    detector.feed_str(&lines(100, 1500), &mut out);
    assert!(detector.heap_bytes() <= bytes, "narrowed: {} > {bytes}", detector.heap_bytes());
    assert!(out.is_empty(), "{out:?}");
}

#[test]
fn a_run_starting_inside_a_finding_is_not_traced_back_at_every_sample() {
    // Found by fuzzing (trim target, 32,768 units in 0.4 s): a run of one unit that starts inside
    // a loop's finding never counts, and was traced back over its whole length for every period
    // due at every sample (~10 us per unit; now 171 units traced in all). Then every period
    // still held at every sample inside the run and was dismissed one by one (~70 instructions
    // per unit, 20x clean text): a sample now leaves out the periods the run covers. Counted as
    // units compared and periods found holding, not time.
    let text = "\t\t\u{3000}\taa".repeat(347) + &"a".repeat(30_688);
    crate::window::TRACED.with(|traced| traced.set(0));
    crate::state::HELD.with(|held| held.set(0));
    let found = scan_str(&text, &DEFAULT_RULES);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!((found[0].period, found[0].start), (6, 0));
    let traced = crate::window::TRACED.with(|traced| traced.get());
    let held = crate::state::HELD.with(|held| held.get());
    let units = text.chars().count() as u64;
    assert!(traced < units, "{traced} units traced back for {units} units of text");
    assert!(held < units / 2, "{held} periods held for {units} units of text");
}

#[test]
fn a_long_run_below_its_rule_is_not_traced_back_at_every_sample() {
    // Found by fuzzing (rules target, known_bugs::slow_run): a run of one unit that stays below
    // its rule was left to the next sample again and again, untracked, and traced back over its
    // whole length for every period due at every sample (~100 us per unit here).
    let rules = Rules::new(RuleValues { whitespace_min_span: 65_536, ..*DEFAULT_RULES }).unwrap();
    let text = format!("x{}y", " ".repeat(20_000));
    crate::window::TRACED.with(|traced| traced.set(0));
    assert_eq!(scan_str(&text, &rules), vec![]);
    let traced = crate::window::TRACED.with(|traced| traced.get());
    let units = text.len() as u64;
    assert!(traced < units, "{traced} units traced back for {units} units of text");
}

#[test]
fn a_stretch_of_one_unit_is_not_traced_back_for_every_period() {
    // Found by fuzzing (rules target, a 13 s timeout): with periods up to 65,535 and every span
    // above 65,536, a run of 65,540 spaces is left to later samples, and the sample that first
    // sees it whole found every period up to its length holding and traced each back over the
    // run (4.7 s; 128 ms with the default max_long_period). Those periods are powers of the one
    // unit and are no longer sampled. Counted as units compared, not time.
    let rules = Rules::new(RuleValues {
        max_period: 2,
        max_long_period: 65_535,
        min_repeats: 65_537,
        text_span: 7,
        code_min_repeats: 4,
        code_span: 33,
        long_min_repeats: 3,
        min_span: 65_537,
        code_min_span: 65_537,
        single_char_min_span: 65_537,
        whitespace_min_span: 65_537,
        table_span: 65_537,
        min_lines: 65_537,
        code_min_lines: 65_537,
        counter_min_lines: 65_537,
        counter_span: 0,
        code_counter_min_lines: 65_537,
        code_counter_span: 0,
        data_counter_min_lines: 65_537,
        payload_span: 65_537,
        template_min_lines: 65_537,
    })
    .unwrap();
    let text = format!("x{}", " ".repeat(65_540));
    crate::window::TRACED.with(|traced| traced.set(0));
    let found = scan_str(&text, &rules);
    assert_eq!((found.len(), found[0].period), (1, 1), "{found:?}");
    let traced = crate::window::TRACED.with(|traced| traced.get());
    let units = text.len() as u64;
    assert!(traced < 4 * units, "{traced} units traced back for {units} units of text");
}

#[test]
fn detector_agrees_with_oracle_on_default_rules() {
    with_each_build(agrees_with_oracle_on_default_rules);
}

fn agrees_with_oracle_on_default_rules() {
    let mut rng = Rng(0xD1CE);
    for case in 0..5 {
        let mut text = random_text(&mut rng);
        let block = text.clone();
        for _ in 0..rng.below(30) {
            text.extend_from_slice(&block[..block.len().min(1 + rng.below(200))]);
        }
        assert_eq!(scan_units(&text, &DEFAULT_RULES), oracle::scan(&text, &DEFAULT_RULES), "case {case}");
    }
}

fn first(text: &str) -> Finding {
    scan_str(text, &DEFAULT_RULES).into_iter().next().unwrap_or_else(|| panic!("no finding in {text:.80?}"))
}

#[test]
fn load_tools_loops_are_found_within_about_twenty_repeats() {
    // As lines, `loadTools.` is a line of words: 14 of them hold before 20 copies of the block.
    for (block, rule, period) in [
        ("loadTools.", Rule::PeriodicRun, 10),
        ("loadTools.\n", Rule::IdenticalLines, 10),
        ("loadTools. ", Rule::PeriodicRun, 11),
    ] {
        let text = block.repeat(2000);
        let f = first(&text);
        assert_eq!((f.rule, f.start, f.period), (rule, 0, period), "{block:?}: {f:?}");
        assert!(f.detected_at <= 250, "{block:?}: {f:?}");
        // Offline, the finding is the whole region.
        assert_eq!((f.repeats, f.end), (2000, text.len() as u64), "{block:?}: {f:?}");
    }
}

#[test]
fn offsets_are_code_points() {
    let prefix = "Привет, 世界! 👋🏽 é\n";
    let text = format!("{prefix}{}", "не знаю, ".repeat(100));
    let f = first(&text);
    let chars: Vec<char> = text.chars().collect();
    assert_eq!(f.start, prefix.chars().count() as u64);
    let block: String = chars[f.start as usize..(f.start + f.period) as usize].iter().collect();
    assert_eq!(block, "не знаю, ");
}

/// Text is decoded a piece at a time, its ASCII runs widened whole: mostly-ASCII text with chars
/// of two, three and four bytes anywhere (at a piece's edge too) gives what its code points give.
#[test]
fn decoded_text_gives_what_its_code_points_give() {
    let mut rng = Rng(0xDEC0);
    for case in 0..300 {
        let alphabet: Vec<char> = ["ab \n", "ab.\né", "a 人\n", "x\u{1F600} .\n"][case % 4].chars().collect();
        let block: String = (0..1 + rng.below(40)).map(|_| alphabet[rng.below(alphabet.len())]).collect();
        let text: String = (0..rng.below(3000)).map(|_| alphabet[rng.below(alphabet.len())]).collect::<String>()
            + &block.repeat(rng.below(60));
        let chars: Vec<u32> = text.chars().map(u32::from).collect();
        for rules in [&SMALL_RULES, &DEFAULT_RULES] {
            assert_eq!(scan_str(&text, rules), scan_units(&chars, rules), "case {case}");
        }
    }
}

#[test]
fn long_blocks_and_lines() {
    let paragraph = "The quick brown fox jumps over the lazy dog while the cat watches from the \
                     window and wonders why anyone would jump at all.\n";
    let long_line: String = (0..50).map(|i| format!("w{i} ")).collect::<String>() + "\n";
    let code_block: String = (0..90).map(|i| format!("    let value_{i} = compute({i}, &input);\n")).collect();
    for (text, rule, period) in [
        (paragraph.repeat(6), Rule::PeriodicRun, paragraph.chars().count()),
        (long_line.repeat(30), Rule::LongBlock, long_line.chars().count()),
        (code_block.repeat(5), Rule::LongBlock, code_block.chars().count()),
    ] {
        let f = first(&text);
        assert_eq!((f.rule, f.period as usize, f.start), (rule, period, 0));
    }
    let lines: String = (0..40).map(|i| format!("same line{}\n", "\n".repeat(i % 3))).collect();
    let f = first(&lines);
    assert_eq!((f.rule, f.repeats, f.start, f.end), (Rule::IdenticalLines, 40, 0, lines.len() as u64));
    let mut streamed = Vec::new();
    Detector::new(DEFAULT_RULES).feed_str(&lines, &mut streamed);
    assert_eq!((streamed[0].repeats, streamed[0].end), (14, f.detected_at), "as the rule first held");
}

#[test]
fn one_letter_fifty_thousand_times() {
    let f = first(&"a".repeat(50_000));
    assert_eq!((f.period, f.start, f.detected_at), (1, 0, 1024));
}

#[test]
fn a_loop_after_a_glitch_is_a_new_region() {
    let text = "go on. ".repeat(30) + "!" + &"go on. ".repeat(30);
    let found = scan_str(&text, &DEFAULT_RULES);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[1].start > found[0].start);
}

#[test]
fn state_does_not_grow_with_the_stream() {
    let mut small = Detector::new(DEFAULT_RULES);
    let mut large = Detector::new(DEFAULT_RULES);
    assert_eq!(large.heap_bytes(), 0, "an idle detector holds nothing");
    let mut out = Vec::new();
    let text = "Some ordinary text, with words that vary: 0123456789.\n";
    small.feed_str(&text.repeat(200), &mut out);
    for _ in 0..200 {
        large.feed_str(&text.repeat(1000), &mut out);
    }
    assert_eq!(small.window_len(), large.window_len());
    assert_eq!(small.heap_bytes(), large.heap_bytes());
    // Units are stored as narrow as they fit: ~16, ~31 and ~63 KiB at the three widths (README,
    // _core.pyi), within 64 KiB at every width.
    const KIB: usize = 1024;
    assert!(large.heap_bytes() <= 17 * KIB, "Latin-1: {}", large.heap_bytes());
    large.feed_str("naïve 人\n", &mut out);
    assert!((17 * KIB..=32 * KIB).contains(&large.heap_bytes()), "BMP: {}", large.heap_bytes());
    large.feed_str("🙂\n", &mut out);
    assert!((32 * KIB..=64 * KIB).contains(&large.heap_bytes()), "beyond the BMP: {}", large.heap_bytes());
    for _ in 0..50 {
        large.feed_str(&text.repeat(1000), &mut out);
    }
    assert!(large.heap_bytes() <= 64 * KIB, "{}", large.heap_bytes());
}

#[test]
fn a_token_stream_stays_small() {
    // A batch holds one stream per row: at the token preset a stream of ids below 65,536 (most
    // vocabularies) holds 13 KiB, twice that above.
    const KIB: usize = 1024;
    let mut detector = Detector::new(TOKEN_RULES);
    let mut out = Vec::new();
    let ids: Vec<u32> = (0..200_000u32).map(|i| (i * 7919) % 49_152).collect();
    detector.feed_units(&ids, &mut out);
    assert!((12 * KIB..=14 * KIB).contains(&detector.heap_bytes()), "{}", detector.heap_bytes());
    detector.feed_units(&[100_000], &mut out);
    assert!((24 * KIB..=28 * KIB).contains(&detector.heap_bytes()), "{}", detector.heap_bytes());
}

#[test]
fn trim_keeps_the_clean_prefix_and_the_rest() {
    let prefix = "Here is the plan:\n";
    let suffix = "\nDone.";
    let text = format!("{prefix}{}{suffix}", "loadTools.".repeat(500));
    let trimmed = trim_units(&units(&text), &DEFAULT_RULES, 3);
    let out: String = trimmed.units.iter().filter_map(|&u| char::from_u32(u)).collect();
    assert!(out.starts_with(&format!("{prefix}{}", "loadTools.".repeat(3))), "{out}");
    assert!(out.ends_with(suffix));
    assert_eq!(trimmed.removals.len(), 1);
    assert_eq!(trimmed.removals[0].units(), 4970);
    assert!(out.contains("removed 4970 units: \"loadTools.\" repeated 497 more times (periodic_run)"), "{out}");
    let clean = "nothing repeats here";
    assert_eq!(trim_units(&units(clean), &DEFAULT_RULES, 3).units, units(clean));
}

#[test]
fn token_ids_at_the_top_of_the_range() {
    // u32::MAX is also the window's filler: it must still count as a unit like any other.
    let mut units = vec![3, 1, 4, 1, 5];
    units.extend([u32::MAX, 7, u32::MAX - 1].repeat(300));
    let found = scan_units(&units, &DEFAULT_RULES);
    assert_eq!(found, oracle::scan(&units, &DEFAULT_RULES));
    assert_eq!(found.first().map(|f| (f.start, f.period)), Some((5, 3)));
}

#[test]
fn units_that_differ_only_in_their_high_bits_differ() {
    // Narrow storage would read 0x1_0041 or 0x141 as 'A' and see one run of 2,001 'A's (a
    // finding at 1,024).
    for odd_one in [0x141, 0x1_0041] {
        let mut units = vec![0x41; 1000];
        units.push(odd_one);
        units.extend([0x41; 1000]);
        assert_eq!(scan_units(&units, &DEFAULT_RULES), vec![], "{odd_one:#x}");
    }
    let mut units = vec![0x41; 1000];
    units.push(0x1_0041);
    units.extend([0x41; 1000]);
    units.extend([0x41; 1000]);
    assert_eq!(scan_units(&units, &DEFAULT_RULES), oracle::scan(&units, &DEFAULT_RULES));
    assert_eq!(scan_units(&units, &DEFAULT_RULES).len(), 1);
}

#[test]
fn lines_crafted_to_collide_under_a_known_line_hash_are_told_apart() {
    // Lines longer than the window are compared by hash. The hash was unkeyed: unit `i` of a line
    // folded into lane `i % 4` as `(lane ^ (unit + 1)) * MIX` from lane 0. Two lines that differ
    // in units 0, 4 and 8 (all lane 0) collide once lane 0 agrees in its upper 32 bits after unit 4
    // (a birthday search over ~2^16 random pairs of ids) and unit 8 makes up the lower 32. Output
    // crafted that way forced a false `identical_lines` stop.
    const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
    let fold = |lane: u64, id: u32| (lane ^ (u64::from(id) + 1)).wrapping_mul(MIX);
    let visible = |id: u32| !crate::classes::is_whitespace(id) && id != u32::from(b'\n');
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut by_upper = std::collections::HashMap::new();
    let (first, second) = loop {
        let pair = (0x1000 + rng.below(1 << 30) as u32, 0x1000 + rng.below(1 << 30) as u32);
        let lane = fold(fold(0, pair.0), pair.1);
        let earlier = *by_upper.entry(lane >> 32).or_insert((pair, lane));
        let last = (earlier.1 ^ lane ^ 1).wrapping_sub(1) as u32;
        if earlier.0 != pair && visible(last) {
            break ([earlier.0 .0, earlier.0 .1, 0], [pair.0, pair.1, last]);
        }
    };
    let window = Detector::new(SMALL_RULES).window_len() as u32;
    let line = |lane_0: [u32; 3]| -> Vec<u32> {
        let mut line: Vec<u32> = (0..4 * window).map(|i| 0x10_0000 + i).collect();
        (line[0], line[4], line[8]) = (lane_0[0], lane_0[1], lane_0[2]);
        line.push(u32::from(b'\n'));
        line
    };
    let (line_a, line_b) = (line(first), line(second));
    assert_ne!(line_a, line_b);
    let text: Vec<u32> = (0..10).flat_map(|i| if i % 2 == 0 { line_a.clone() } else { line_b.clone() }).collect();
    assert_eq!(oracle::scan(&text, &SMALL_RULES), vec![]);
    assert_eq!(scan_units(&text, &SMALL_RULES), vec![]);
}

/// One detector reset between texts finds what a new detector per text finds: the kept window
/// is cleared of every unit written, whether the text was short, filled the window and wrapped
/// around it, or widened it. The rules are the defaults (a window of thousands of units).
#[test]
fn a_reset_detector_finds_what_a_new_one_finds() {
    let mut rng = Rng(0xD1CE);
    let mut reused = Detector::new(DEFAULT_RULES);
    let mut found = 0;
    for case in 0..600 {
        let mut text = random_text(&mut rng);
        // Some texts repeat theirs past the window's end, so the ring wraps.
        let copies = [1, 1, 1, 20, 200][rng.below(5)];
        text = text.repeat(copies);
        // Streamed findings, as the rule first held (an offline scan reports whole extents).
        let mut fresh = Detector::new(DEFAULT_RULES);
        let mut expected = Vec::new();
        fresh.feed_units(&text, &mut expected);
        reused.reset();
        let mut got = Vec::new();
        reused.feed_units(&text, &mut got);
        assert_eq!(got, expected, "case {case}");
        found += expected.len();
    }
    assert!(found > 100, "the texts should reach the rules, found {found}");
}

/// Texts of counter lines: a few templates with one or two numbers that mostly step by one,
/// sometimes stay, jump, go back, carry (`9` to `10`, `099` to `100`), with blank lines,
/// identical lines and noise lines between them, and digits in noise; and cycles of two to four
/// templates (some without a number; cycles of four are no counters), whose numbers step line by
/// line or once a cycle.
fn random_counter_text(rng: &mut Rng) -> Vec<u32> {
    const TEMPLATES: [&str; 8] = ["# a", "#. ab", "x # y #", "##", "a#", "- # é人", "ab", "x y"];
    let mut text = String::new();
    for _ in 0..1 + rng.below(4) {
        let period = [1, 1, 2, 3, 3, 4][rng.below(6)];
        let cycle: Vec<&str> = (0..period).map(|_| TEMPLATES[rng.below(TEMPLATES.len())]).collect();
        let once_a_cycle = rng.below(2) == 0;
        let (mut a, mut b) = (rng.below(12) as u64, rng.below(3) as u64);
        let zeros = if rng.below(4) == 0 { "0" } else { "" };
        for i in 0..rng.below(16 * period) {
            let template = cycle[i % period];
            let line = template.replacen('#', &format!("{zeros}{a}"), 1).replacen('#', &b.to_string(), 1);
            text.push_str(&line);
            text.push_str([" \n", "\n", "\n\n", "\n \n"][rng.below(4)]);
            if once_a_cycle && i % period != period - 1 {
                continue;
            }
            match rng.below(12) {
                0 => {}
                1 => a += 2,
                2 => a = a.saturating_sub(1),
                3 => b += 1,
                4 => text.push_str("a1\n"),
                _ => a += 1,
            }
        }
    }
    units(&text)
}

#[test]
fn detector_agrees_with_oracle_on_counter_texts() {
    with_each_build(agrees_with_oracle_on_counter_texts);
}

/// The detector on `text`, scanned whole and fed in random chunks, against the oracle: the
/// oracle's findings.
fn agrees_with_oracle_on(text: &[u32], rules: &Rules, rng: &mut Rng, case: usize) -> Vec<Finding> {
    let expected = oracle::scan(text, rules);
    let shown: String = text.iter().filter_map(|&u| char::from_u32(u)).collect();
    assert_eq!(scan_units(text, rules), expected, "case {case}: {shown:?}");
    assert_eq!(feed_in_chunks(text, rules, rng), oracle::first_held(text, rules), "chunked, case {case}: {shown:?}");
    expected
}

fn agrees_with_oracle_on_counter_texts() {
    let mut rng = Rng(0xC0DE);
    let (mut found, mut cycles) = (0, 0);
    for case in 0..3000 {
        let text = random_counter_text(&mut rng);
        let expected = agrees_with_oracle_on(&text, &SMALL_RULES, &mut rng, case);
        found += expected.iter().filter(|f| f.rule == Rule::CounterLines).count();
        cycles += expected.iter().filter(|f| f.rule == Rule::CounterLines && f.block.contains(&10)).count();
    }
    assert!(found > 500, "counter texts should reach the rule often, found {found}");
    assert!(cycles > 100, "cycles of lines should reach the rule often, found {cycles}");
}

/// Counting loops SmolLM2-135M wrote (the development set's, docs/tuning.md; their shapes rebuilt
/// here): found by the default rules, as one `counter_lines` finding over the streak.
#[test]
fn counter_templates_are_found_and_numbered_lists_are_not() {
    let numbered = |from: u64, to: u64, line: &dyn Fn(u64) -> String| -> String { (from..=to).map(line).collect() };
    // `- N. Cleaning: ` from 1 to 156 (a template of words: 16 lines needed).
    let cleaning = numbered(1, 156, &|n| format!("- {n}. Cleaning: \n"));
    let found = scan_str(&cleaning, &DEFAULT_RULES);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    assert_eq!((f.rule, f.start, f.repeats, f.end), (Rule::CounterLines, 0, 156, cleaning.chars().count() as u64));
    assert_eq!(f.block, units("- 1. Cleaning:"));
    assert_eq!(f.period, 14);
    let at = cleaning.match_indices('\n').nth(15).unwrap().0 as u64 + 1;
    assert_eq!(f.detected_at, at);
    // A 67-unit template with numbers inside it that stay, 45 lines (16 needed).
    let kubernetes =
        numbered(1, 45, &|n| format!("{n}. Kubernetes: https://kubernetes.io/services/pod/api-7f9c/api-7f9c\n"));
    assert_eq!(scan_str(&kubernetes, &DEFAULT_RULES).iter().map(|f| f.rule).collect::<Vec<_>>(), [Rule::CounterLines]);
    // A clean numbered list of distinct items is not, however long.
    let items = numbered(1, 200, &|n| {
        format!(
            "{n}. item {}\n",
            "abcdefghij".chars().cycle().skip(n as usize % 7).take(4 + n as usize % 5).collect::<String>()
        )
    });
    assert_eq!(scan_str(&items, &DEFAULT_RULES), []);
    // Numbers alone count when every one goes up (data: 64 lines needed), not beside
    // a column that stays or does not count.
    let commas = numbered(1, 500, &|n| format!("{n},\n"));
    let found = scan_str(&commas, &DEFAULT_RULES);
    assert_eq!(found.iter().map(|f| (f.rule, f.repeats)).collect::<Vec<_>>(), [(Rule::CounterLines, 500)]);
    assert_eq!(found[0].detected_at, commas.match_indices('\n').nth(63).unwrap().0 as u64 + 1);
    assert_eq!(scan_str(&numbered(1, 500, &|n| format!("{n},0\n")), &DEFAULT_RULES), []);
    assert_eq!(scan_str(&numbered(1, 500, &|n| format!("{n}\t{}\n", n * 7 % 13)), &DEFAULT_RULES), []);
}

/// Texts of template lines: lines drawn in random order from a few templates, prose and not,
/// with numbers of any width (some touching letters, so no number), among lines with no number,
/// lines indented as code, short lines, blank lines and exact repeats, some longer than the
/// small rules' lines may be; templates that reorder another's words (near-copies of it).
fn random_template_text(rng: &mut Rng) -> Vec<u32> {
    const TEMPLATES: [&str; 15] = [
        "Day # we go to the sea",
        "we go to the sea Day #",
        "At the # cat is fed",
        "Back in 19# we sailed home",
        "    Day # we go to the sea",
        "\tWe saw # red birds",
        "At # the cat is fed",
        "We saw # red birds",
        "東京で一日旅 #",
        "No number in this line",
        "x# and y# are names",
        "code(#) = x;",
        "- I saw a dog at #:#.",
        "ab #",
        "A long line of words with a number # in it and more words after it",
    ];
    let mut text = String::new();
    let chosen: Vec<&str> = (0..2 + rng.below(4)).map(|_| TEMPLATES[rng.below(TEMPLATES.len())]).collect();
    let mut previous = String::new();
    for _ in 0..rng.below(60) {
        let line = if rng.below(10) == 0 {
            previous.clone()
        } else {
            let template = chosen[rng.below(chosen.len())];
            let mut line = String::new();
            for (i, part) in template.split('#').enumerate() {
                if i > 0 {
                    line.push_str(&[rng.below(10), rng.below(1000), 7][rng.below(3)].to_string());
                }
                line.push_str(part);
            }
            line
        };
        text.push_str(&line);
        text.push_str(["\n", " \n", "\n\n", "\nab\n"][rng.below(4)]);
        previous = line;
    }
    if rng.below(2) == 0 {
        text.pop();
    }
    units(&text)
}

#[test]
fn detector_agrees_with_oracle_on_template_texts() {
    with_each_build(agrees_with_oracle_on_template_texts);
}

fn agrees_with_oracle_on_template_texts() {
    let mut rng = Rng(0x7E4D);
    let mut found = 0;
    for case in 0..2000 {
        let text = random_template_text(&mut rng);
        // The oracle tries every period up to `max_long_period`: the default rules on some texts.
        let rules: &[&Rules] = if case % 20 == 0 { &[&SMALL_RULES, &DEFAULT_RULES] } else { &[&SMALL_RULES] };
        for &rules in rules {
            let expected = agrees_with_oracle_on(&text, rules, &mut rng, case);
            found += expected.iter().filter(|f| f.rule == Rule::TemplateLines).count();
        }
    }
    assert!(found > 500, "template texts should reach the rule often, found {found}");
}

/// A model cycling through numbered items in no fixed order: found as `template_lines` at the
/// streak's eighth line, the streak starting at the first item that recurs; trimmed to its first
/// lines with the count of the rest.
#[test]
fn numbered_items_cycling_in_no_fixed_order_are_template_lines() {
    let items = ["Water the plants in the morning.", "Feed the cat twice a day.", "Take the dog for a long walk."];
    let order = [0, 1, 2, 1, 0, 2, 2, 1, 0, 1, 2, 0, 0, 1];
    let text: String = order.iter().enumerate().map(|(n, &i)| format!("{}. {}\n", n + 1, items[i])).collect();
    let found = scan_str(&text, &DEFAULT_RULES);
    assert_eq!(found.len(), 1, "{found:?}");
    let f = &found[0];
    let line_starts: Vec<u64> = std::iter::once(0).chain(text.match_indices('\n').map(|(i, _)| i as u64 + 1)).collect();
    assert_eq!((f.rule, f.start, f.repeats), (Rule::TemplateLines, line_starts[3], 11));
    assert_eq!(f.block, units("4. Feed the cat twice a day."));
    assert_eq!(f.detected_at, line_starts[11], "the streak's 8th line is item 11");
    assert_eq!(f.end, text.chars().count() as u64);
    let trimmed = trim_units(&units(&text), &DEFAULT_RULES, 2);
    assert_eq!(trimmed.removals.len(), 1);
    assert_eq!((trimmed.removals[0].start, trimmed.removals[0].repeats), (line_starts[5], 9));
    // The same items, each once: no streak.
    let once: String = items.iter().enumerate().map(|(n, item)| format!("{}. {item}\n", n + 1)).collect();
    assert_eq!(scan_str(&once.repeat(2), &DEFAULT_RULES), []);
}

/// Texts of counts inside lines: runs of numbers one up from each other with a separator,
/// glitched now and then (a number skipped, another separator, a name, a newline, a number of
/// four digits), between noise.
fn random_count_text(rng: &mut Rng) -> Vec<u32> {
    const SEPARATORS: [&str; 9] = [".", ", ", " ", "x", "_", "a b", ") (", "人,", "0123456789abcdef."];
    const NOISE: [&str; 7] = ["ab", " ", "\n", "7", "x1", ". ", "1000"];
    let mut text = String::new();
    for _ in 0..1 + rng.below(4) {
        for _ in 0..rng.below(6) {
            text.push_str(NOISE[rng.below(NOISE.len())]);
        }
        let mut separator = SEPARATORS[rng.below(SEPARATORS.len())];
        let mut n = [rng.below(12), 95 + rng.below(10), 990 + rng.below(9)][rng.below(3)];
        for _ in 0..rng.below(14) {
            text.push_str(&n.to_string());
            text.push_str(separator);
            match rng.below(16) {
                0 => n += 2,
                1 => separator = SEPARATORS[rng.below(SEPARATORS.len())],
                2 => text.push_str(NOISE[rng.below(NOISE.len())]),
                _ => n += 1,
            }
        }
    }
    units(&text)
}

#[test]
fn detector_agrees_with_oracle_on_count_texts() {
    with_each_build(agrees_with_oracle_on_count_texts);
}

fn agrees_with_oracle_on_count_texts() {
    let mut rng = Rng(0xC0C0);
    let mut found = 0;
    for case in 0..3000 {
        let text = random_count_text(&mut rng);
        for rules in [&SMALL_RULES, &DEFAULT_RULES] {
            let expected = agrees_with_oracle_on(&text, rules, &mut rng, case);
            found += expected.iter().filter(|f| f.rule == Rule::CounterRun).count();
        }
    }
    assert!(found > 500, "count texts should reach the rule often, found {found}");
}

/// A count on one line to the token limit (Gemma 3 270M, tests/data/gemma3_270m_outputs.jsonl's
/// g24-sampled, its shape rebuilt here) is found at the unit after its 64th number; a ruler of
/// 25 numbers (typeshed's `Literal[1, 2, ..., 25]`) is not.
#[test]
fn a_count_inside_a_line_is_a_counter_run() {
    let count: String = (54..258).map(|n| format!("{n}.")).collect();
    let text = format!("Write a chant.\n)['25.{count}25");
    let [found] = &scan_str(&text, &DEFAULT_RULES)[..] else { panic!("one finding") };
    let start = text.find("54.").unwrap() as u64;
    assert_eq!((found.rule, found.start, found.repeats), (Rule::CounterRun, start, 204));
    assert_eq!(found.detected_at, text.find("118.").unwrap() as u64);
    assert_eq!(found.block, units("54."));
    let ruler: Vec<String> = (1..=25).map(|n| n.to_string()).collect();
    assert_eq!(scan_str(&format!("Literal[{}]\n", ruler.join(", ")), &DEFAULT_RULES), vec![]);
}
