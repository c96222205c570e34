"""Stop repetition loops inside llama-cpp-python, in-process, on token ids.

``LoopStoppingCriteria`` goes in ``Llama.create_completion(stopping_criteria=...)``: the completion
ends at the token where its generated ids start to loop (``finish_reason`` ``"stop"``).
``create_chat_completion`` takes no stopping criteria, only a logits processor:
``LoopEOSLogitsProcessor`` forces the model's ``EOS`` token on the step after the loop is found,
so the chat completion ends normally.

    stop = LoopStoppingCriteria(llm)
    criteria = StoppingCriteriaList([stop])
    out = llm.create_completion(prompt, max_tokens=1500, stopping_criteria=criteria)
    if stop.loop is not None:
        text = stop.loop.trimmed_text   # the loop cut to its first copies, plus a marker

llama-cpp-python calls both with the ids it has evaluated, the prompt first: the first call holds
only the prompt, which is not fed, so the finding's offsets count generated tokens. Each call
feeds the ids that are new since the last (one per step) to a ``loopbreak.TokenDetector``;
nothing is decoded until the rule holds. The rules default to ``Rules.for_tokens()``. One object
watches one completion: make a new one for each call.
"""

from __future__ import annotations

from loopbreak._extras import require_extra

require_extra("llama-cpp", "llama_cpp")

from typing import Optional

import numpy as np
import numpy.typing as npt
from llama_cpp import Llama

from loopbreak._core import DEFAULT_KEEP, Rules, TokenDetector
from loopbreak.errors import LoopbreakError
from loopbreak.integrations._tokens import TokenLoop, check_keep, check_rules, token_loop

__all__ = ["LoopEOSLogitsProcessor", "LoopStoppingCriteria", "TokenLoop"]


class _Watch:
    """The detector of one completion, fed the ids generated since the prompt."""

    def __init__(self, llama: Llama, rules: Optional[Rules], keep: int) -> None:
        if not isinstance(llama, Llama):
            raise TypeError(f"llama must be a llama_cpp.Llama, got {type(llama).__name__}")
        self.llama = llama
        self.rules = check_rules(rules)
        self.keep = check_keep(keep)
        self.detector = TokenDetector(self.rules)
        self.prompt: Optional[list[int]] = None
        self.seen = 0
        self.loop: Optional[TokenLoop] = None

    def observe(self, input_ids: npt.NDArray[np.intc]) -> bool:
        """Feeds the ids past the prompt not fed yet; returns whether the completion looped."""
        if self.prompt is None:
            self.prompt = [int(i) for i in input_ids]
            return False
        start = len(self.prompt) + self.seen
        if len(input_ids) < start:
            raise LoopbreakError(
                "these input_ids do not continue the completion this object watched: use a new one"
                " for each completion"
            )
        if self.loop is None and len(input_ids) > start:
            new = input_ids[start:]
            self.seen += len(new)
            if self.detector.feed(new) is not None:
                finding = self.detector.finding
                assert finding is not None
                generated = input_ids[len(self.prompt) :].tolist()
                self.loop = token_loop(finding, generated, self._decode, self.rules, self.keep)
        return self.loop is not None

    def _decode(self, ids: list[int]) -> str:
        text: str = self.llama.detokenize(ids, prev_tokens=self.prompt).decode(
            "utf-8", errors="replace"
        )
        return text


class LoopStoppingCriteria:
    """A llama-cpp-python ``StoppingCriteria``: ``True`` from the step the generated ids loop.

    ``llama`` decodes the ids once they loop; ``rules`` defaults to ``Rules.for_tokens()``;
    ``keep`` is how many copies ``loop.trimmed_text`` keeps. Raises ``TypeError`` for arguments
    of the wrong type, ``ValueError`` for ``keep`` < 1.
    """

    def __init__(
        self, llama: Llama, *, rules: Optional[Rules] = None, keep: int = DEFAULT_KEEP
    ) -> None:
        self._watch = _Watch(llama, rules, keep)

    def __call__(self, input_ids: npt.NDArray[np.intc], logits: npt.NDArray[np.single]) -> bool:
        return self._watch.observe(input_ids)

    @property
    def loop(self) -> Optional[TokenLoop]:
        """The loop the completion stopped on, or ``None``."""
        return self._watch.loop

    @property
    def rules(self) -> Rules:
        return self._watch.rules


class LoopEOSLogitsProcessor:
    """A llama-cpp-python ``LogitsProcessor`` that leaves the scores alone until the generated ids
    loop, then allows only the model's ``EOS`` token, so the completion ends normally.

    The arguments are those of ``LoopStoppingCriteria``.
    """

    def __init__(
        self, llama: Llama, *, rules: Optional[Rules] = None, keep: int = DEFAULT_KEEP
    ) -> None:
        self._watch = _Watch(llama, rules, keep)
        self._eos = llama.token_eos()

    def __call__(
        self, input_ids: npt.NDArray[np.intc], scores: npt.NDArray[np.single]
    ) -> npt.NDArray[np.single]:
        if not self._watch.observe(input_ids):
            return scores
        forced = np.full_like(scores, -np.inf)
        forced[self._eos] = 0.0
        return forced

    @property
    def loop(self) -> Optional[TokenLoop]:
        """The loop the completion ended on, or ``None``."""
        return self._watch.loop

    @property
    def rules(self) -> Rules:
        return self._watch.rules
