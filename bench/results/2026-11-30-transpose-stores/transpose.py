"""copy_strided on the K and V slabs of vLLM CPU pages (128 tokens, 4 heads, 128 dims, float32;
128 pages): GB/s of the K transpose and of the V rows, medians of 9."""
import time, statistics, numpy as np, kvstash
T, H, D, B = 128, 4, 128, 128   # tokens per block, heads, dim, blocks*layers (16 blocks x 8 layers)
src = [np.random.rand(T, H, 2 * D).astype(np.float32) for _ in range(B)]   # not exactly canonical, rows per token
rows_k = [np.ascontiguousarray(s[:, :, :D]) for s in src]
rows_v = [np.ascontiguousarray(s[:, :, D:]) for s in src]
def aligned(n):
    raw = np.zeros(n * 4 + 64, np.uint8)
    k = (-raw.ctypes.data) % 64
    return raw[k:k + n * 4].view(np.float32)
pages = [aligned(H * 2 * D * T) for _ in range(B)]  # cache-line aligned, as torch allocates
def slab(page, base, strides, width):
    return np.ndarray((T, H, width), np.float32, page, base * 4, tuple(x * 4 for x in strides))
ks = [slab(p, 0, (1, 32768, 128), D) for p in pages]
vs = [slab(p, 16384, (128, 32768, 1), D) for p in pages]
for name, dsts, srcs in (("K transpose", ks, rows_k), ("V rows", vs, rows_v)):
    ts = []
    for r in range(9):
        t = time.perf_counter()
        for d, s in zip(dsts, srcs): kvstash.copy_strided(d, s)
        ts.append(time.perf_counter() - t)
    nbytes = sum(s.nbytes for s in srcs)
    print(f"{name}: {nbytes / statistics.median(ts) / 1e9:.2f} GB/s ({statistics.median(ts)*1e3:.1f} ms for {nbytes >> 20} MiB)")
    assert all(np.array_equal(d, s) for d, s in zip(dsts, srcs))
t = time.perf_counter()
big = np.empty(32 << 20, np.uint8); src_b = np.ones(32 << 20, np.uint8)
ts=[]
for r in range(9):
    t = time.perf_counter(); kvstash.copy_strided(big, src_b); ts.append(time.perf_counter() - t)
print(f"32 MiB contiguous: {(32<<20) / statistics.median(ts) / 1e9:.2f} GB/s")
