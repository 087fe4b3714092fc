"""Adapters that plug kvstash into inference engines' storage interfaces.

- :mod:`kvstash.integrations.lmcache`: LMCache L2 ``native_plugin`` adapter.
- :mod:`kvstash.integrations.sglang`: SGLang HiCache storage backend (``dynamic``).
- :mod:`kvstash.integrations.vllm_tier`: vLLM offloading connector secondary tier.
- :mod:`kvstash.integrations.vllm_connector`: vLLM KV connector (KVConnectorBase_V1).

Each imports its engine lazily, so ``import kvstash`` never needs an engine installed.
"""
