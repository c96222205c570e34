"""``loopbreak proxy``: an OpenAI-compatible HTTP proxy that guards any model server
(``pip install 'loopbreak[proxy]'``; docs/integrations/proxy.md).

- ``loopbreak.proxy.config``: ``ProxyConfig`` and the ``--rules`` presets.
- ``loopbreak.proxy.app``: ``create_app(config)``, the Starlette app (routes, pass-through,
  the whole-answer check).
- ``loopbreak.proxy.sse``: relaying a streamed answer through the stream guard.
- ``loopbreak.proxy.formats``: where each guarded API keeps its text, and how a stop is told.
- ``loopbreak.proxy.metrics``: the Prometheus counters on ``/metrics``.
- ``loopbreak.proxy.cli``: the ``loopbreak proxy`` command.
"""
