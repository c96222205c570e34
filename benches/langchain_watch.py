"""What watching a LangChain model's stream costs per token, next to what LangChain itself
spends per token, all in one process:

    python benches/langchain_watch.py

- ``Detector.feed``: the detector alone on the same deltas (the floor);
- ``guard``: ``loopbreak.guard`` over the same str deltas (the stream guard the watch drives);
- ``watch``: ``LoopbreakMiddleware``'s stream watch, ``on_llm_new_token`` with a real
  ``ChatGenerationChunk`` per token (what runs inside a governed model call);
- ``model.invoke``: a streamed ``GenericFakeChatModel.invoke`` (LangChain's callback dispatch
  and chunk merging, no network), without and with the watch in its callbacks.

The text is clean prose (no finding), split on whitespace as the fake model splits it.
"""

from __future__ import annotations

import re
import time
import uuid
from collections.abc import Callable

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from loopbreak import DEFAULT_KEEP, Detector, guard
from loopbreak.integrations.langchain import _StreamWatch

TEXT = " ".join(
    f"Step {n}: the worker read batch {n * 7} from the queue, found {n % 13} malformed rows "
    f"and wrote {n * 3 + 1} clean rows to table t{n % 5}."
    for n in range(400)
)
DELTAS = re.split(r"(\s)", TEXT)


def best_of(runs: int, work: Callable[[], None]) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        work()
        times.append(time.perf_counter() - start)
    return min(times)


def feed() -> None:
    detector = Detector()
    for delta in DELTAS:
        detector.feed(delta)


CHUNKS = [ChatGenerationChunk(message=AIMessageChunk(content=delta)) for delta in DELTAS]


def plain_guard() -> None:
    for _ in guard(DELTAS):
        pass


def watch() -> None:
    handler = _StreamWatch(None, DEFAULT_KEEP)
    run_id = uuid.uuid4()
    for delta, chunk in zip(DELTAS, CHUNKS):
        handler.on_llm_new_token(delta, chunk=chunk, run_id=run_id)


def invoke(watched: bool) -> Callable[[], None]:
    def run() -> None:
        handlers: list[BaseCallbackHandler] = [_StreamWatch(None, DEFAULT_KEEP)] if watched else []
        model = GenericFakeChatModel(messages=iter([TEXT]))
        # stream=True: the streamed path, as when the agent is streamed or streaming=True.
        model.invoke("go", config={"callbacks": handlers}, stream=True)

    return run


def main() -> None:
    tokens = len(DELTAS)
    floor = best_of(5, feed)
    rows = [
        ("Detector.feed", floor),
        ("guard", best_of(5, plain_guard)),
        ("watch (on_llm_new_token)", best_of(5, watch)),
        ("model.invoke, streamed", best_of(3, invoke(False))),
        ("model.invoke, streamed + watch", best_of(3, invoke(True))),
    ]
    print(f"{tokens} tokens, {len(TEXT)} chars")
    for name, seconds in rows:
        print(f"{name:<32} {seconds / tokens * 1e6:8.2f} us/token  {seconds / floor:7.1f}x feed")


if __name__ == "__main__":
    main()
