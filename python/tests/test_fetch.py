"""kvstash.FetchAdvisor: the C++ fetch-or-recompute model through the package (no daemon)."""

import math

import pytest

import kvstash
from kvstash import Tier

# Round numbers: recomputing 100 tokens takes 10 ms; their 100 kB move in 0.1 ms at 1 GB/s.
SIMPLE = dict(tokens_per_s=10000, attention_s_per_token2=0, gpu_bytes_per_s=1e9,
              dram_bytes_per_s=1e9, nvme_bytes_per_s=1e9, fixed_fetch_s=0)


def simple_advisor(**overrides):
    return kvstash.FetchAdvisor(1000, **{**SIMPLE, **overrides})


def test_defaults_come_from_the_cpp_options():
    defaults = kvstash.fetch_advisor_defaults()
    assert set(defaults) == {"tokens_per_s", "attention_s_per_token2", "gpu_bytes_per_s",
                             "dram_bytes_per_s", "nvme_bytes_per_s", "fixed_fetch_s",
                             "ewma_weight", "fetch_margin"}
    advisor = kvstash.FetchAdvisor(kv_bytes_per_token=128 << 10)
    assert advisor.kv_bytes_per_token == 128 << 10
    assert advisor.bandwidth_bytes_per_s(Tier.DRAM) == pytest.approx(defaults["dram_bytes_per_s"])
    assert advisor.bandwidth_bytes_per_s(Tier.NVME) == pytest.approx(defaults["nvme_bytes_per_s"])
    assert advisor.bandwidth_bytes_per_s(Tier.NONE) == 0
    assert advisor.recompute_seconds(1000) == pytest.approx(
        1000 / defaults["tokens_per_s"] + defaults["attention_s_per_token2"] * 1000 * 500.5)
    assert "dram=" in repr(advisor)


@pytest.mark.parametrize("field,value", [
    ("kv_bytes_per_token", 0),
    ("tokens_per_s", 0),
    ("dram_bytes_per_s", -1),
    ("nvme_bytes_per_s", math.nan),
    ("fixed_fetch_s", -1),
    ("ewma_weight", 1.5),
    ("fetch_margin", 0),
])
def test_bad_options_are_refused_by_name(field, value):
    kwargs = {**SIMPLE, "kv_bytes_per_token": 1000, field: value}
    with pytest.raises(kvstash.InvalidArgument, match=field):
        kvstash.FetchAdvisor(**kwargs)


def test_ewma_follows_recorded_fetches():
    advisor = simple_advisor()
    advisor.record_fetch(Tier.DRAM, 4_000_000, 0.001)  # 4 GB/s replaces the prior
    assert advisor.bandwidth_bytes_per_s(Tier.DRAM) == pytest.approx(4e9)
    for _ in range(100):
        advisor.record_fetch(Tier.DRAM, 1_000_000, 0.001)  # 1 GB/s
    assert advisor.bandwidth_bytes_per_s(Tier.DRAM) == pytest.approx(1e9, rel=1e-6)
    assert advisor.observations(Tier.DRAM) == 101
    assert advisor.observations(Tier.NVME) == 0
    advisor.record_fetch(Tier.NONE, 1000, 1.0)  # ignored
    advisor.record_fetch(Tier.DRAM, 0, 1.0)  # ignored
    assert advisor.observations(Tier.DRAM) == 101


def test_throttled_tier_flips_should_fetch():
    advisor = simple_advisor()
    assert advisor.should_fetch(100, Tier.NVME)
    assert advisor.fetch_seconds(100, Tier.NVME) == pytest.approx(1e-4)
    advisor.record_fetch(Tier.NVME, 1_000_000, 1.0)  # throttled to 1 MB/s
    assert not advisor.should_fetch(100, Tier.NVME)
    assert advisor.should_fetch(100, Tier.DRAM)
    assert not advisor.should_fetch(100, Tier.NONE)
    assert math.isinf(advisor.fetch_seconds(100, Tier.NONE))


def test_chunks_to_fetch_stops_before_the_slow_tier():
    advisor = simple_advisor(nvme_bytes_per_s=1e6)
    tiers = [Tier.DRAM, Tier.GPU, Tier.NVME, Tier.DRAM]
    assert advisor.chunks_to_fetch(tiers, 100, 1000) == 2
    lookup = kvstash.LookupResult(hit_count=3, tiers=[Tier.DRAM] * 3, lease_id=0)
    assert advisor.chunks_to_fetch(lookup, 100, 1000) == 3
    assert advisor.chunks_to_fetch([], 100, 1000) == 0
    with pytest.raises(kvstash.InvalidArgument, match="tier"):
        advisor.chunks_to_fetch([7], 100, 1000)
