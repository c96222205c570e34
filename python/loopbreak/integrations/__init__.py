"""Adapters between loopbreak's stream guards and the libraries streams come from.

Each submodule imports its library, which is an optional dependency: ``openai`` for
``loopbreak.integrations.openai``, ``anthropic`` for ``loopbreak.integrations.anthropic``,
``litellm`` for ``loopbreak.integrations.litellm`` (stream guards and a proxy guardrail),
``starlette`` for ``loopbreak.integrations.starlette``.
"""
