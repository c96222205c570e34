"""Adapters between loopbreak and the libraries streams and agent loops come from.

Each submodule imports its library, which is an optional dependency (its extra):
``openai`` and ``starlette`` for the stream guards of ``loopbreak.integrations.openai`` and
``loopbreak.integrations.starlette``; ``pydantic-ai`` and ``openai-agents`` for the run
governance of ``loopbreak.integrations.pydantic_ai`` and ``loopbreak.integrations.openai_agents``.
"""
