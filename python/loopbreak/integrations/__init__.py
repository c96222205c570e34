"""Adapters between loopbreak and the libraries streams and agent loops come from.

Each submodule imports its library, an optional dependency installed with its extra
(``pip install 'loopbreak[NAME]'``), and is imported only when used:

- stream guards: ``openai`` (the SDK's chat and Responses streams), ``anthropic`` (Messages
  streams), ``litellm`` (its streams, and a guardrail for its proxy), ``starlette`` (relaying a
  guarded stream as server-sent events);
- agent-loop governance: ``langchain`` (a middleware for LangChain v1 agents), ``pydantic_ai``
  (a capability), ``openai_agents`` (a runner for the OpenAI Agents SDK);
- inside the engines, on token ids: ``transformers`` (a ``StoppingCriteria`` and an EOS
  ``LogitsProcessor``), ``llama_cpp`` (llama-cpp-python's stopping criteria and logits
  processor).
"""
