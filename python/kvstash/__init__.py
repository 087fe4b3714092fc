"""kvstash: Python client for kvstashd, the KV-cache server for LLM inference.

    import kvstash
    with kvstash.Client("ucx://127.0.0.1:7072") as client:
        ns = client.namespace(model="meta-llama/Meta-Llama-3-8B", num_layers=32,
                              kv_heads=8, head_dim=128, dtype="bf16", chunk_tokens=256)
        keys = ns.prefix_keys(token_ids)
        hit = client.lookup(ns, keys).hit_count
        client.get_into(ns, keys[:hit], buffers[:hit])

Engine adapters live in ``kvstash.integrations`` (LMCache, SGLang HiCache, vLLM).
"""

from ._async import Completion, Completions
from ._client import (Client, Namespace, copy_strided, default_options, key_from_engine_hash,
                      memory_at)
from ._errors import (DeadlineExceeded, Error, InvalidArgument, NotFound, StatusCode,
                      Unavailable)
from ._fetch import FetchAdvisor, fetch_advisor_defaults
from ._types import (ClusterMember, ClusterOptions, ClusterStatus, LookupResult, NamespaceUsage,
                     Priority, Tier, TierUsage)

__version__ = "0.1.0"

__all__ = [
    "Client",
    "ClusterMember",
    "ClusterOptions",
    "ClusterStatus",
    "Completion",
    "Completions",
    "DeadlineExceeded",
    "Error",
    "FetchAdvisor",
    "InvalidArgument",
    "LookupResult",
    "Namespace",
    "NamespaceUsage",
    "NotFound",
    "Priority",
    "StatusCode",
    "Tier",
    "TierUsage",
    "Unavailable",
    "copy_strided",
    "default_options",
    "fetch_advisor_defaults",
    "key_from_engine_hash",
    "memory_at",
]
