"""The text pieces of one OpenAI-shaped chat delta, shared by the openai and litellm adapters.

Both libraries give chunks of the same shape (``choices[i].delta`` with ``content`` and
``tool_calls[j].function.arguments``) as different classes, and keep a reasoning model's
thinking in different places; each adapter checks its own class and finds the reasoning, then
reads the rest of the delta here.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Optional

from loopbreak.streaming.guard import CONTENT, REASONING, Piece


def delta_pieces(choice_index: int, delta: Any, reasoning: Optional[str]) -> Iterator[Piece]:
    """Reasoning, answer text and tool-call input of one choice's delta, in that order.

    Choices other than 0 get their sources prefixed with ``choices[n].``. A function call's
    source is ``tool_calls[j].arguments``; a custom tool call's free-form input (litellm) is
    ``tool_calls[j].input``.
    """
    prefix = "" if choice_index == 0 else f"choices[{choice_index}]."
    if reasoning:
        yield Piece(prefix + REASONING, reasoning)
    if delta.content:
        yield Piece(prefix + CONTENT, delta.content)
    for call in delta.tool_calls or ():
        function = getattr(call, "function", None)
        if function is not None:
            yield Piece(
                f"{prefix}tool_calls[{call.index}].arguments",
                function.arguments or "",
                function.name,
            )
            continue
        custom = getattr(call, "custom", None)
        if custom is not None:
            yield Piece(f"{prefix}tool_calls[{call.index}].input", custom.input or "", custom.name)
