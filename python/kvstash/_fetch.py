"""kvstash.FetchAdvisor: fetch cached KV from kvstash, or recompute it?

Fetch time is the tier's latency plus the bytes over its bandwidth, as observed from the
fetches the caller records; recompute time comes from a prefill model of the engine. A
slow tier (a throttled or busy NVMe, a congested link) then never makes time-to-first-token
worse than recomputing. The C++ class is ``kvstash::FetchAdvisor``
(client/include/kvstash/fetch_advisor.h), where every default is explained.

    advisor = kvstash.FetchAdvisor(kv_bytes_per_token=128 << 10)   # Llama-3-8B fp16
    hits = client.lookup(ns, keys)
    n = advisor.chunks_to_fetch(hits.tiers, ns.chunk_tokens, len(token_ids))
    start = time.perf_counter()
    client.get_into(ns, keys[:n], buffers[:n])
    advisor.record_fetch(kvstash.Tier.DRAM, n * chunk_bytes, time.perf_counter() - start)
"""

from __future__ import annotations

from typing import Any, Dict, Optional, Sequence

from . import _native
from ._types import LookupResult, Tier


def fetch_advisor_defaults() -> Dict[str, Any]:
    """Every keyword option of :class:`FetchAdvisor` with its default (the C++ defaults)."""
    return dict(_native.fetch_advisor_defaults())


class FetchAdvisor:
    """Decides whether fetching a chunk prefix from kvstash beats recomputing it.

    ``kv_bytes_per_token``: bytes of KV per token of the model, all layers, K and V
    (131072 for Llama-3-8B in fp16, 524288 for Llama-2-7B). Keyword options (``None``:
    the default, see :func:`fetch_advisor_defaults`):

    - ``tokens_per_s``, ``attention_s_per_token2``: the engine's prefill model; prefilling
      ``n`` tokens after ``c`` cached ones takes ``n / tokens_per_s +
      attention_s_per_token2 * n * (c + (n + 1) / 2)`` seconds. Defaults: Llama-3-8B on one
      H100. Calibrate them by timing the engine's prefill at two prompt lengths.
    - ``gpu_bytes_per_s``, ``dram_bytes_per_s``, ``nvme_bytes_per_s``: bandwidth of each
      tier until the first fetch from it is recorded.
    - ``fixed_fetch_s``: latency of one fetch whatever its size.
    - ``ewma_weight``: weight of each new observation, in (0, 1].
    - ``fetch_margin``: fetch when ``fetch_s * fetch_margin <= recompute_s``.

    Raises :class:`kvstash.InvalidArgument` naming the option when one is out of range.
    Thread-safe: one advisor can serve every request of an engine.
    """

    def __init__(
        self,
        kv_bytes_per_token: int,
        *,
        tokens_per_s: Optional[float] = None,
        attention_s_per_token2: Optional[float] = None,
        gpu_bytes_per_s: Optional[float] = None,
        dram_bytes_per_s: Optional[float] = None,
        nvme_bytes_per_s: Optional[float] = None,
        fixed_fetch_s: Optional[float] = None,
        ewma_weight: Optional[float] = None,
        fetch_margin: Optional[float] = None,
    ) -> None:
        given = {
            "tokens_per_s": tokens_per_s,
            "attention_s_per_token2": attention_s_per_token2,
            "gpu_bytes_per_s": gpu_bytes_per_s,
            "dram_bytes_per_s": dram_bytes_per_s,
            "nvme_bytes_per_s": nvme_bytes_per_s,
            "fixed_fetch_s": fixed_fetch_s,
            "ewma_weight": ewma_weight,
            "fetch_margin": fetch_margin,
        }
        options = {k: float(v) for k, v in given.items() if v is not None}
        self._native = _native.FetchAdvisor(int(kv_bytes_per_token), **options)

    @property
    def kv_bytes_per_token(self) -> int:
        """Bytes of KV per token, as given."""
        return self._native.kv_bytes_per_token

    def record_fetch(self, tier: Tier, nbytes: int, seconds: float) -> None:
        """One completed fetch of ``nbytes`` from ``tier`` that took ``seconds`` (request to
        last byte). Fetches no slower than ``fixed_fetch_s``, of 0 bytes, or from
        ``Tier.NONE`` carry no bandwidth information and are ignored."""
        self._native.record_fetch(int(tier), int(nbytes), float(seconds))

    def bandwidth_bytes_per_s(self, tier: Tier) -> float:
        """Current bandwidth estimate of ``tier`` (its prior until a fetch is recorded);
        0 for ``Tier.NONE``."""
        return self._native.bandwidth_bytes_per_s(int(tier))

    def observations(self, tier: Tier) -> int:
        """Fetches of ``tier`` that :meth:`record_fetch` took into account."""
        return self._native.observations(int(tier))

    def fetch_seconds(self, tokens: int, tier: Tier) -> float:
        """Seconds to fetch the KV of ``tokens`` tokens from ``tier`` in one request
        (infinite for ``Tier.NONE``)."""
        return self._native.fetch_seconds(int(tokens), int(tier))

    def recompute_seconds(self, tokens: int, context_tokens: int = 0) -> float:
        """Seconds the engine spends prefilling ``tokens`` tokens after ``context_tokens``
        cached ones."""
        return self._native.recompute_seconds(int(tokens), int(context_tokens))

    def should_fetch(self, tokens: int, tier: Tier, context_tokens: int = 0) -> bool:
        """Whether fetching ``tokens`` tokens from ``tier`` (after ``context_tokens`` the
        engine already has) is no slower than recomputing them."""
        return self._native.should_fetch(int(tokens), int(tier), int(context_tokens))

    def chunks_to_fetch(
        self, tiers: "Sequence[Tier] | LookupResult", chunk_tokens: int, prompt_tokens: int
    ) -> int:
        """Of a lookup's hits (a :class:`LookupResult` or its ``tiers``), how many leading
        chunks of ``chunk_tokens`` tokens to fetch so that fetching them and recomputing the
        rest of the ``prompt_tokens`` prompt is fastest. 0 when none is worth it."""
        if isinstance(tiers, LookupResult):
            tiers = tiers.tiers
        return self._native.chunks_to_fetch([int(t) for t in tiers], int(chunk_tokens),
                                            int(prompt_tokens))

    def __repr__(self) -> str:
        bw = ", ".join(f"{t.name.lower()}={self.bandwidth_bytes_per_s(t) / 1e9:.3g}GB/s"
                       for t in (Tier.GPU, Tier.DRAM, Tier.NVME))
        return f"FetchAdvisor(kv_bytes_per_token={self.kv_bytes_per_token}, {bw})"
