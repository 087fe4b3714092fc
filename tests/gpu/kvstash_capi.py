"""ctypes access to kvstash's Client and PagedTransfer (libkvstash_paged_capi.so), and a
kvstashd started for a test. Test-only: the GPU end-to-end test drives real torch caches
with it."""

from __future__ import annotations

import ctypes
import importlib.util
import os
from dataclasses import dataclass
from typing import Sequence


def _load_testing():
    """python/kvstash/testing.py by path: importing the kvstash package would load its
    native extension, which GPU hosts running this test from a bundle do not have."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), os.pardir, os.pardir,
                        "python", "kvstash", "testing.py")
    spec = importlib.util.spec_from_file_location("kvstash_testing", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_testing = _load_testing()

PUT, GET, GET_LAYERWISE = 0, 1, 2
OK, NOT_FOUND = 0, 5  # absl::StatusCode values the tests look for

class CapiLayout(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_char_p)] + [
        (name, ctypes.c_int32)
        for name in ("num_layers", "num_blocks", "block_size", "kv_heads", "head_dim",
                     "elem_bytes")
    ] + [(name, ctypes.c_int64)
         for name in ("view_block_stride", "view_head_stride", "view_token_stride")]


class CapiTransferOptions(ctypes.Structure):
    _fields_ = [(name, ctypes.c_int32) for name in ("memory", "device", "chunk_tokens",
                                                    "pipeline_depth", "max_ctas")]


class KvstashError(RuntimeError):
    """A failed call; the message is the absl status."""


def _load(path: str) -> ctypes.CDLL:
    lib = ctypes.CDLL(path)
    vp, i, u64, cp = ctypes.c_void_p, ctypes.c_int, ctypes.c_uint64, ctypes.c_char_p
    sigs = {
        "kvs_client_connect": (vp, [cp, cp, i]),
        "kvs_client_free": (None, [vp]),
        "kvs_client_health": (i, [vp, cp, i]),
        "kvs_transfer_create": (vp, [vp, cp, cp, ctypes.POINTER(CapiLayout),
                                     ctypes.POINTER(u64), i, ctypes.POINTER(u64), i,
                                     ctypes.POINTER(CapiTransferOptions), cp, i]),
        "kvs_transfer_free": (None, [vp]),
        "kvs_transfer_start": (vp, [vp, i, cp, i, ctypes.POINTER(ctypes.c_int32), i, i, i, u64,
                                    cp, i]),
        "kvs_handle_stream_wait": (i, [vp, i, u64, cp, i]),
        "kvs_handle_wait": (i, [vp, ctypes.POINTER(ctypes.c_int32), cp, i]),
        "kvs_handle_free": (None, [vp]),
    }
    for name, (res, args) in sigs.items():
        fn = getattr(lib, name)
        fn.restype, fn.argtypes = res, args
    return lib


_lib: ctypes.CDLL | None = None


def lib() -> ctypes.CDLL:
    global _lib
    if _lib is None:
        _lib = _load(os.environ.get("KVSTASH_CAPI", "libkvstash_paged_capi.so"))
    return _lib


def _err() -> ctypes.Array:
    return ctypes.create_string_buffer(1024)


def _check(ret, err) -> None:
    if ret is None or ret == -1:
        raise KvstashError(err.value.decode())


class Client:
    """A connected kvstash client (grpc:// or ucx://)."""

    def __init__(self, uri: str):
        err = _err()
        self._p = lib().kvs_client_connect(uri.encode(), err, len(err))
        _check(self._p, err)

    def close(self) -> None:
        if self._p:
            lib().kvs_client_free(self._p)
            self._p = None

    def health(self) -> None:
        err = _err()
        _check(lib().kvs_client_health(self._p, err, len(err)), err)


@dataclass
class Layout:
    kind: str
    num_layers: int
    num_blocks: int
    block_size: int
    kv_heads: int
    head_dim: int
    elem_bytes: int
    # vllm_view / vllm_mla_view: vLLM's KVCacheLayout the views are in, and their byte
    # strides (set by torch_layouts.Cache from the tensors it makes).
    order: str = "LBNHC"
    view_strides: tuple = (0, 0, 0)

    def capi(self) -> CapiLayout:
        return CapiLayout(self.kind.encode(), self.num_layers, self.num_blocks,
                          self.block_size, self.kv_heads, self.head_dim, self.elem_bytes,
                          *self.view_strides)


class Handle:
    """A running paged operation."""

    def __init__(self, p, num_keys: int):
        self._p, self._n = p, num_keys

    def stream_wait(self, stream: int, layer: int = -1) -> None:
        err = _err()
        _check(lib().kvs_handle_stream_wait(self._p, layer, stream, err, len(err)), err)

    def wait(self) -> tuple[int, list[int]]:
        """(leading OK chunks, each chunk's absl status code)."""
        err, codes = _err(), (ctypes.c_int32 * max(self._n, 1))()
        ret = lib().kvs_handle_wait(self._p, codes, err, len(err))
        _check(ret, err)
        return ret, list(codes)[: self._n]

    def __del__(self):
        if getattr(self, "_p", None):
            lib().kvs_handle_free(self._p)


class Transfer:
    """A PagedTransfer over `client` for one cache (tensor addresses as ints)."""

    def __init__(self, client: Client, model: str, dtype: str, layout: Layout,
                 layer_ptrs: Sequence[int], v_layer_ptrs: Sequence[int] = (),
                 on_device: bool = True, chunk_tokens: int = 256, depth: int = 2,
                 max_ctas: int = 0):
        arr = (ctypes.c_uint64 * max(len(layer_ptrs), 1))(*layer_ptrs)
        varr = (ctypes.c_uint64 * max(len(v_layer_ptrs), 1))(*v_layer_ptrs)
        err, cl = _err(), layout.capi()
        opts = CapiTransferOptions(0 if on_device else 1, 0, chunk_tokens, depth, max_ctas)
        self._client = client
        self._p = lib().kvs_transfer_create(client._p, model.encode(), dtype.encode(),
                                            ctypes.byref(cl), arr, len(layer_ptrs), varr,
                                            len(v_layer_ptrs), ctypes.byref(opts), err, len(err))
        _check(self._p, err)

    def start(self, op: int, keys: Sequence[bytes], block_ids: Sequence[int], num_tokens: int,
              skip_blocks: int = 0, stream: int = 0) -> Handle:
        err = _err()
        ids = (ctypes.c_int32 * max(len(block_ids), 1))(*block_ids)
        p = lib().kvs_transfer_start(self._p, op, b"".join(keys), len(keys), ids, len(block_ids),
                                     skip_blocks, num_tokens, stream, err, len(err))
        _check(p, err)
        return Handle(p, len(keys))

    def run(self, op: int, keys, block_ids, num_tokens, **kw) -> tuple[int, list[int]]:
        return self.start(op, keys, block_ids, num_tokens, **kw).wait()

    def close(self) -> None:
        if self._p:
            lib().kvs_transfer_free(self._p)
            self._p = None


class Daemon(_testing.Daemon):
    """kvstashd on free loopback ports (DRAM only, UCX over shared memory), stopped by
    stop(); its directory and log are kept for the run's report."""

    def __init__(self, kvstashd: str, capacity: str):
        super().__init__({"storage.dram.capacity_bytes": capacity, "ucx.tls": "sm,self"},
                         kvstashd=kvstashd, dir_prefix="kvstash-gpu-")
        self.grpc, self.ucx = self.grpc_uri, self.ucx_uri
