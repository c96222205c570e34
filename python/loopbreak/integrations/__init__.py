"""Adapters between loopbreak's stream guards and the libraries streams come from.

Each submodule imports its library, which is an optional dependency: ``openai`` for
``loopbreak.integrations.openai``, ``starlette`` for ``loopbreak.integrations.starlette``,
``langchain`` for ``loopbreak.integrations.langchain`` (a middleware governing LangChain v1
agents).
"""
