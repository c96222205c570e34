"""Adapters between loopbreak and the libraries model output comes from.

Each submodule imports its library, which is an optional dependency: ``openai`` for
``loopbreak.integrations.openai``, ``starlette`` for ``loopbreak.integrations.starlette``,
``transformers`` (with torch) for ``loopbreak.integrations.transformers`` and ``llama-cpp-python``
for ``loopbreak.integrations.llama_cpp``. The last two stop loops inside the engine, on token ids.
"""
