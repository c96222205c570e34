"""The token preset and what the engine integrations report about a sequence that looped, without
an engine: ids from a small made-up vocabulary, decoded by joining its pieces (the engines' own
decoding is tested end to end in tests/e2e/test_engine_*.py)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

import loopbreak
from loopbreak.integrations._tokens import check_keep, check_rules, token_loop

VOCAB = {1: "The", 2: " plan", 3: ":", 4: "\n", 5: "|", 6: "   ", 7: " done", 8: "."}


def decode(ids: Sequence[int]) -> str:
    return "".join(VOCAB[i] for i in ids)


def first_finding(ids: list[int], rules: loopbreak.Rules) -> loopbreak.TokenFinding:
    detector = loopbreak.TokenDetector(rules)
    detector.feed(ids)
    assert detector.finding is not None
    return detector.finding


def test_the_token_preset_is_one_threshold_for_words_and_code() -> None:
    rules = loopbreak.Rules.for_tokens()
    assert rules == loopbreak.Rules(**rules.to_dict())
    assert rules != loopbreak.Rules()
    # Ids are classified as code points, which says nothing about their text: "ab" (letters)
    # and "0," (code) stand for two ids alike, as do "a" and " " for one; a short block needs
    # min_span ids, more than min_repeats copies of it.
    assert rules.required_span("ab") == rules.required_span("0,") == rules.min_span
    assert rules.min_span > 2 * rules.min_repeats
    assert rules.required_span("a") == rules.required_span(" ") == rules.single_char_min_span
    # Lines of 24 ids and more need min_lines whatever they look like; shorter lines of "code"
    # need code_span ids in all, as a block does (lines split at id 10, a newline as a code point).
    assert rules.required_lines("words here and more words") == rules.required_lines(
        "0, 1, 2, 3, 4, 5, 6, 7, 8"
    )
    assert rules.required_lines("0, 1, 2, 3, 4, 5, 6, 7, 8") == rules.min_lines
    # Blocks of 17 ids and more need ~text_span tokens, and at least long_min_repeats copies.
    assert rules.required_span("xy" * 15) == 11 * 30
    assert rules.required_span("xy" * 400) == 4 * 800


def test_a_loop_is_reported_as_text_and_cut_to_its_first_copies() -> None:
    rules = loopbreak.Rules.for_tokens()
    prefix, block = [1, 2, 3, 4], [5, 6]
    ids = prefix + block * 200
    finding = first_finding(ids, rules)
    assert (finding.start, finding.period, finding.block) == (4, 2, block)
    loop = token_loop(finding, ids, decode, rules, keep=3)
    assert loop.finding == finding
    assert loop.block_text == "|   "
    assert loop.text == decode(ids[: finding.detected_at])
    removed = finding.detected_at - (finding.start + 3 * 2)
    assert loop.tokens_removed == removed
    assert loop.trimmed_text == (
        "The plan:\n|   |   |   "
        f'\n[loopbreak: removed {removed} tokens: "|   "'
        f" repeated {removed // 2} more times (periodic_run)]"
    )
    assert loop.to_dict() == {**finding.to_dict(), "block_text": "|   ", "tokens_removed": removed}


def test_only_the_tokens_up_to_the_finding_are_decoded_and_kept() -> None:
    rules = loopbreak.Rules.for_tokens()
    ids = [1, 2] + [7, 8] * 150
    finding = first_finding(ids, rules)
    # What an engine holds can run past the finding (a logits processor sees it a step later).
    loop = token_loop(finding, ids + [3, 4], decode, rules, keep=1)
    assert loop.text == decode(ids[: finding.detected_at])
    assert loop.trimmed_text.startswith("The plan done.\n[loopbreak: removed ")
    assert '" done." repeated' in loop.trimmed_text


def test_a_long_block_is_previewed_in_the_marker() -> None:
    rules = loopbreak.Rules.for_tokens()
    block = list(range(100, 180))
    ids = block * 16
    finding = first_finding(ids, rules)
    loop = token_loop(finding, ids, lambda got: "".join(f"<{i}>" for i in got), rules)
    assert finding.rule == "long_block"
    assert loop.block_text.startswith("<100><101>") and len(loop.block_text) == 80 * 5
    assert '…" repeated' in loop.trimmed_text


def test_argument_checks() -> None:
    assert check_rules(None) == loopbreak.Rules.for_tokens()
    small = loopbreak.Rules(min_repeats=30)
    assert check_rules(small) is small
    with pytest.raises(TypeError, match="loopbreak.Rules"):
        check_rules({"min_repeats": 3})  # type: ignore[arg-type]
    assert check_keep(2) == 2
    with pytest.raises(ValueError, match="at least 1"):
        check_keep(0)
    with pytest.raises(TypeError, match="int"):
        check_keep(True)
