// Copies between two strided views of the same shape: what an engine adapter's codec
// does to move KV between a page layout and kvstash's chunk format. Rows contiguous on
// both sides become memcpy calls; a transpose (the destination's innermost axis is not the
// source's) is copied in square tiles, so neither side is walked a cache line per element.
//
// Thread-safety: a pure function of its arguments; concurrent calls on disjoint
// destinations are safe.
#pragma once

#include <cstddef>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/types/span.h"

namespace kvstash::python {

// One axis of a copy: its length and each side's step in bytes.
struct CopyAxis {
  int64_t size = 0;
  int64_t dst_stride = 0;
  int64_t src_stride = 0;
};

// The most axes a copy may have.
inline constexpr size_t kMaxCopyAxes = 8;

// Copies every element of `axes` (each `elem_bytes` wide) from `src` to `dst`.
// INVALID_ARGUMENT for more than kMaxCopyAxes axes, a negative size, or an element width
// of 0. REQUIRES: the views do not overlap, and every element they name is mapped.
absl::Status StridedCopy(void* dst, const void* src, absl::Span<const CopyAxis> axes,
                         size_t elem_bytes);

}  // namespace kvstash::python
