"""Adapters that plug kvstash into inference engines' storage interfaces.

- :mod:`kvstash.integrations.lmcache`: LMCache L2 ``native_plugin`` adapter.
- :mod:`kvstash.integrations.sglang`: SGLang HiCache storage backend (``dynamic``).
- :mod:`kvstash.integrations.vllm_tier`: vLLM offloading connector secondary tier.

Each imports its engine lazily, so ``import kvstash`` never needs an engine installed.
"""
