"""Key derivation through the package matches docs/keys.md's vectors."""

import array

import numpy as np
import pytest

import kvstash

SAMPLE = dict(model="meta-llama/Meta-Llama-3-8B", tenant="acme", revision="main", dtype="fp16",
              num_layers=32, kv_heads=8, head_dim=128, chunk_tokens=16)


@pytest.mark.parametrize("algo,ns_id,h", [
    ("xxh3", "6ee7b27620b398d0b911caceda3d3b92",
     ["49425af520939d36f6fa8df66f0e6513", "5741ef70fd9eb8862f0db17223975999",
      "6465999524cacf5151ae137501dd579a"]),
    ("sha256", "0c0e5d7d5fcb1f5a2ae72cd42ba32275",
     ["f3baa879fbaad7f4350bb9db7f771bc2", "6cd0ad0ded041668b7cade62117a0e01",
      "a4ed46dbbbe0247da656cb1c257c1160"]),
])
def test_prefix_keys_match_the_spec(algo, ns_id, h):
    ns = kvstash.Namespace(hash_algo=algo, **SAMPLE)
    assert ns.id.hex() == ns_id
    assert [k.hex() for k in ns.prefix_keys(list(range(48)))] == h
    # A partial last chunk gets no key; int32 buffers and numpy arrays give the same keys.
    assert [k.hex() for k in ns.prefix_keys(range(47))] == h[:2]
    assert [k.hex() for k in ns.prefix_keys(np.arange(48, dtype=np.int32))] == h
    assert [k.hex() for k in ns.prefix_keys(np.arange(48, dtype=np.int64))] == h
    assert [k.hex() for k in ns.prefix_keys(array.array("i", range(48)))] == h


def test_extra_and_engine_hash_vectors():
    ns = kvstash.Namespace(**SAMPLE)
    assert ns.prefix_keys(range(16), extra="lora:adapter-7")[0].hex() == \
        "57f858319f37084de629507cb9a567c3"
    assert ns.key_from_engine_hash(b"vllm-block-0").hex() == "c027037772e11f3739d850356fddcc7c"
    assert kvstash.key_from_engine_hash(b"vllm-block-0", ns) == \
        ns.key_from_engine_hash(b"vllm-block-0")
    assert ns.position_independent_key(range(16)).hex() == "c02e314bca4b6991d6133e5064fd6dcc"


def test_namespace_free_engine_hash_vectors():
    assert kvstash.key_from_engine_hash(b"vllm-block-0").hex() == \
        "a4e1cb297b56b70fed996313242bc2eb"
    assert kvstash.key_from_engine_hash(b"").hex() == "16d7314d3a4fd1ad8ca3dde27961ba47"
    # str is taken as its UTF-8 bytes.
    assert kvstash.key_from_engine_hash("model@00000000@0@ab12") == \
        kvstash.key_from_engine_hash(b"model@00000000@0@ab12")
    assert len(kvstash.key_from_engine_hash("x" * 10000)) == 16


def test_namespace_rules_are_the_daemons():
    with pytest.raises(kvstash.InvalidArgument, match="model_id"):
        kvstash.Namespace(model="", num_layers=1, kv_heads=1, head_dim=1)
    with pytest.raises(kvstash.InvalidArgument, match="tp_rank"):
        kvstash.Namespace(model="m", num_layers=1, kv_heads=1, head_dim=1, tp_rank=2, tp_size=2)
    with pytest.raises(kvstash.InvalidArgument, match="hash_algo"):
        kvstash.Namespace(model="m", num_layers=1, kv_heads=1, head_dim=1, hash_algo="md5")
    with pytest.raises(kvstash.InvalidArgument, match=r"token_ids\[1\]"):
        kvstash.Namespace(**SAMPLE).prefix_keys([1, 2 ** 40])


def test_namespaces_compare_by_id():
    a, b = kvstash.Namespace(**SAMPLE), kvstash.Namespace(**SAMPLE)
    assert a == b and hash(a) == hash(b)
    assert a != kvstash.Namespace(**{**SAMPLE, "tp_size": 2, "tp_rank": 1})
    assert "acme" in repr(a)
