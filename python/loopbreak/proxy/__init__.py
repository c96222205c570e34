"""``loopbreak proxy``: an HTTP proxy that guards any model server speaking the OpenAI API or
the Anthropic Messages API (``pip install 'loopbreak[proxy]'``; docs/integrations/proxy.md).

- ``loopbreak.proxy.config``: ``ProxyConfig`` and the ``--rules`` presets.
- ``loopbreak.proxy.app``: ``create_app(config)``, the Starlette app (routes, pass-through,
  the whole-answer check).
- ``loopbreak.proxy.sse``: relaying a streamed answer through the stream guard.
- ``loopbreak.proxy.formats``: where each guarded OpenAI API keeps its text, how a stop is
  told, and the shape of the proxy's own errors.
- ``loopbreak.proxy.messages``: the same for the Anthropic Messages API (``/v1/messages``).
- ``loopbreak.proxy.metrics``: the Prometheus counters on ``/metrics``.
- ``loopbreak.proxy.cli``: the ``loopbreak proxy`` command.
"""
