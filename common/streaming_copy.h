// StreamingCopy: memcpy for large copies whose destination this core will not read soon,
// such as a put into the daemon's arena (by the daemon, or by a same-host client through
// shared memory) or a get into an engine's staging buffer on its way to the GPU.
//
// glibc's memcpy switches to non-temporal stores only past a threshold tied to the cache
// size (tens of MiB on server parts), so a 4 MiB copy into cold memory reads every
// destination line before overwriting it and leaves the cache full of lines nobody reads
// again: ~8 GB/s on the build hosts. Non-temporal stores skip both (~15 GB/s there).
// bench/results/2026-11-21-ucx-runs has the numbers.
//
// Thread-safety: a function of its arguments.
#pragma once

#include <cstddef>

namespace kvstash {

// Copies `n` bytes from `src` to `dst` (which must not overlap). On x86-64 the bulk goes
// by SSE2 non-temporal stores (wider units measured the same, 12.6-14 GB/s for all three:
// the copy is bound by memory, not by the vector width) and ends with a store fence, so
// the bytes are visible to other processes in order with later stores of this thread;
// the unaligned head and the tail use memcpy. Elsewhere it is memcpy.
void StreamingCopy(void* dst, const void* src, size_t n);

// StreamingCopy without the fence, for a series of copies that ends with one
// StreamingFence() before the bytes are published.
void StreamingCopyUnfenced(void* dst, const void* src, size_t n);
void StreamingFence();

// memcpy, except for a destination 1 to 63 bytes past the source modulo 4 KiB, which goes
// by an SSE2 loop. There glibc's `rep movsb` (its memcpy for copies from a few KiB up to
// its non-temporal threshold) stalls on 4 KiB aliasing: a 128 KiB copy ran at 2 GB/s
// instead of 8 on the build host. numpy places a large array 16 bytes into its first page,
// so a get from page-aligned arena bytes into such an array hits it.
void CopyBytes(void* dst, const void* src, size_t n);

// Chunks smaller than this are better copied by memcpy: they fit the cache, the reader may
// find them there, and the fence costs more than the stores save.
inline constexpr size_t kStreamingCopyMin = 256 * 1024;

}  // namespace kvstash
