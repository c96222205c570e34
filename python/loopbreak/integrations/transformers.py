"""Stop repetition loops inside Hugging Face ``transformers`` generation, on token ids.

``LoopStoppingCriteria`` goes in ``generate(stopping_criteria=[...])``: on every decode step it
feeds the newest token of every row of the batch to one ``loopbreak.TokenStreams`` (one call into
the core per step) and answers one bool per row, so a row that loops stops there while the others
go on. ``LoopEOSLogitsProcessor`` goes in ``generate(logits_processor=[...])`` instead, for callers
who need every sequence to end normally: the row that looped gets its ``EOS`` token forced on the
next step.

    stop = LoopStoppingCriteria(tokenizer, model.generation_config)
    out = model.generate(**inputs, stopping_criteria=[stop], max_new_tokens=1024)
    for row, loop in enumerate(stop.loops):
        if loop is not None:
            print(row, loop.finding.rule, repr(loop.block_text), loop.trimmed_text[-120:])

The prompt is not fed: a row's stream starts with its first generated token, and the findings'
offsets count generated tokens. A row stops being fed once it ends (an ``EOS`` or pad id of the
generation config: what ``generate`` appends to finished rows) or once it looped. Nothing is
decoded until a row loops; then its generated part is decoded once, for ``TokenLoop``. The rules
default to ``Rules.for_tokens()``.

One object serves one ``generate`` call of greedy search or sampling (``num_beams=1``): beam
search reorders the rows between steps, which a stream per row cannot follow, and raises
``LoopbreakError`` as soon as a row does not end with the token it ended with at the last call
(for the criteria, which sees every candidate, on the second step).
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("transformers", "torch", "transformers")

from typing import Any, Optional

import numpy as np
import torch
from transformers import (
    GenerationConfig,
    LogitsProcessor,
    PreTrainedTokenizerBase,
    StoppingCriteria,
)

from loopbreak._core import DEFAULT_KEEP, Rules, TokenStreams
from loopbreak.errors import LoopbreakError
from loopbreak.integrations._tokens import TokenLoop, check_keep, check_rules, token_loop

__all__ = ["LoopEOSLogitsProcessor", "LoopStoppingCriteria", "TokenLoop"]


def _ids(value: Any) -> list[int]:
    if value is None:
        return []
    if isinstance(value, int):
        return [value]
    if isinstance(value, torch.Tensor):
        return [int(i) for i in value.flatten().tolist()]
    return [int(i) for i in value]


class _Rows:
    """The streams of one batch: one per row, fed the row's generated tokens until it ends."""

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        generation_config: GenerationConfig,
        rules: Optional[Rules],
        keep: int,
    ) -> None:
        if not isinstance(tokenizer, PreTrainedTokenizerBase):
            raise TypeError(
                f"tokenizer must be a transformers tokenizer, got {type(tokenizer).__name__}"
            )
        if not isinstance(generation_config, GenerationConfig):
            raise TypeError(
                "generation_config must be a transformers GenerationConfig"
                " (model.generation_config),"
                f" got {type(generation_config).__name__}"
            )
        self.tokenizer = tokenizer
        self.rules = check_rules(rules)
        self.keep = check_keep(keep)
        self.eos_ids = _ids(generation_config.eos_token_id)
        # generate() pads finished rows with pad_token_id, or with the first EOS id without one.
        self.end_ids = sorted(set(self.eos_ids + _ids(generation_config.pad_token_id)))
        self.streams = TokenStreams(self.rules)
        self.prompt_length = -1
        self.seen = 0
        self.last = np.zeros(0, dtype=np.int64)
        """Each row's last token at the previous call, to tell that a call continues it."""
        self.slots = np.zeros(0, dtype=np.int64)
        self.live = np.zeros(0, dtype=bool)
        self.live_rows = 0
        self.looped = np.zeros(0, dtype=bool)
        self.looped_rows = torch.zeros(0, dtype=torch.bool)
        """``looped`` as the bool tensor the criteria answers, on the device of ``input_ids``."""
        self.loops: list[Optional[TokenLoop]] = []

    def observe(self, input_ids: torch.Tensor, appended: int) -> bool:
        """Feeds the tokens ``input_ids`` holds past those seen (``appended`` of them on the
        first call: the rest is the prompt); returns whether some row looped in this call."""
        if input_ids.dim() != 2:
            raise ValueError(
                f"input_ids must be (batch, sequence), got shape {tuple(input_ids.shape)}"
            )
        batch, length = input_ids.shape
        if self.prompt_length < 0:
            self.prompt_length = length - appended
            self.live = np.ones(batch, dtype=bool)
            self.live_rows = batch
            self.looped = np.zeros(batch, dtype=bool)
            self.loops = [None] * batch
            self.slots = np.array([self.streams.add() for _ in range(batch)], dtype=np.int64)
            self.looped_rows = torch.zeros(batch, dtype=torch.bool, device=input_ids.device)
        elif (
            batch != len(self.live)
            or length < self.prompt_length + self.seen
            or not np.array_equal(
                input_ids[:, self.prompt_length + self.seen - 1].cpu().numpy(), self.last
            )
        ):
            # Beam search hands over its candidates, reordered at every step: the token a row
            # ended with is not the one before its new token.
            raise LoopbreakError(
                "these input_ids do not continue the rows this object watched: beam search"
                " (num_beams > 1) is not supported, use greedy search or sampling, and a new"
                " object for each generate() call"
            )
        start = self.prompt_length + self.seen
        self.seen = length - self.prompt_length
        self.last = input_ids[:, length - 1].cpu().numpy()
        if length == start or self.live_rows == 0:
            return False
        any_looped = False
        for column in input_ids[:, start:].cpu().numpy().T:
            for end in self.end_ids:
                ended = column == end
                if ended.any():
                    self.live &= ~ended
                    self.live_rows = int(self.live.sum())
            # Most steps feed every row: no fancy indexing then.
            if self.live_rows == len(self.live):
                fired = self.streams.step(self.slots, column)
            elif self.live_rows:
                rows = np.flatnonzero(self.live)
                fired = self.streams.step(rows, column[rows])
            else:
                break
            for row in fired:
                self._loop(row, input_ids)
                any_looped = True
        return any_looped

    def _loop(self, row: int, input_ids: torch.Tensor) -> None:
        finding = self.streams.finding(row)
        assert finding is not None
        generated = input_ids[
            row, self.prompt_length : self.prompt_length + finding.detected_at
        ].tolist()
        self.loops[row] = token_loop(finding, generated, self._decode, self.rules, self.keep)
        self.live[row] = False
        self.live_rows -= 1
        self.looped[row] = True
        self.looped_rows[row] = True

    def _decode(self, ids: list[int]) -> str:
        return str(self.tokenizer.decode(ids, skip_special_tokens=True))


# transformers is read as Any by mypy (see pyproject.toml), so its base classes are Any.
class LoopStoppingCriteria(StoppingCriteria):  # type: ignore[misc]
    """Stops each row of a batch at the step its generated tokens start to loop.

    ``tokenizer`` decodes a row once it loops; ``generation_config`` (the one ``generate`` uses,
    usually ``model.generation_config``) gives the ``EOS`` and pad ids that end a row. ``rules``
    defaults to ``Rules.for_tokens()``; ``keep`` is how many copies ``trimmed_text`` keeps.
    Raises ``TypeError`` for arguments of the wrong type, ``ValueError`` for ``keep`` < 1.
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        generation_config: GenerationConfig,
        *,
        rules: Optional[Rules] = None,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        self._rows = _Rows(tokenizer, generation_config, rules, keep)

    def __call__(self, input_ids: torch.LongTensor, scores: Any, **kwargs: Any) -> torch.BoolTensor:
        """One bool per row, ``True`` for the rows that looped (a bool tensor of shape (batch,),
        on the device of ``input_ids``)."""
        self._rows.observe(input_ids, appended=1)
        return self._rows.looped_rows.clone()

    @property
    def loops(self) -> list[Optional[TokenLoop]]:
        """Per row of the batch: the ``TokenLoop`` it stopped on, or ``None``."""
        return list(self._rows.loops)

    @property
    def rules(self) -> Rules:
        return self._rows.rules


class LoopEOSLogitsProcessor(LogitsProcessor):  # type: ignore[misc]
    """Makes a row that loops end with ``EOS`` on the next step, so it finishes as a normal
    sequence (``EOS`` last) rather than being cut.

    The arguments are those of ``LoopStoppingCriteria``; the forced id is the first ``EOS`` id of
    ``generation_config``, which must have one (``ValueError`` otherwise).
    """

    def __init__(
        self,
        tokenizer: PreTrainedTokenizerBase,
        generation_config: GenerationConfig,
        *,
        rules: Optional[Rules] = None,
        keep: int = DEFAULT_KEEP,
    ) -> None:
        self._rows = _Rows(tokenizer, generation_config, rules, keep)
        if not self._rows.eos_ids:
            raise ValueError("generation_config has no eos_token_id to force")
        self._eos = self._rows.eos_ids[0]

    def __call__(self, input_ids: torch.LongTensor, scores: torch.FloatTensor) -> torch.FloatTensor:
        """``scores`` unchanged, except that every row that looped may only pick ``EOS``."""
        self._rows.observe(input_ids, appended=0)
        if not self._rows.looped.any():
            return scores
        rows = torch.from_numpy(np.flatnonzero(self._rows.looped)).to(scores.device)
        forced = scores.clone()
        forced[rows] = -float("inf")
        forced[rows, self._eos] = 0.0
        return forced

    @property
    def loops(self) -> list[Optional[TokenLoop]]:
        """Per row of the batch: the ``TokenLoop`` it ended on, or ``None``."""
        return list(self._rows.loops)

    @property
    def rules(self) -> Rules:
        return self._rows.rules
