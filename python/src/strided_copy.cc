#include "strided_copy.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/streaming_copy.h"

#if defined(__SSE2__)
#include <emmintrin.h>
#endif

namespace kvstash::python {
namespace {

// Moves one element; a fixed width compiles to a single load and store.
template <size_t kBytes>
struct FixedMove {
  static constexpr size_t kWidth = kBytes;
  size_t bytes() const { return kBytes; }
  void operator()(uint8_t* d, const uint8_t* s) const { std::memcpy(d, s, kBytes); }
};

struct AnyMove {
  static constexpr size_t kWidth = 0;  // known at run time only
  size_t width;
  size_t bytes() const { return width; }
  void operator()(uint8_t* d, const uint8_t* s) const { std::memcpy(d, s, width); }
};

// Calls `fn` with the mover for `elem_bytes`.
template <typename Fn>
void WithMove(size_t elem_bytes, Fn&& fn) {
  switch (elem_bytes) {
    case 1:
      return fn(FixedMove<1>());
    case 2:
      return fn(FixedMove<2>());
    case 4:
      return fn(FixedMove<4>());
    case 8:
      return fn(FixedMove<8>());
    case 16:
      return fn(FixedMove<16>());
    default:
      return fn(AnyMove{elem_bytes});
  }
}

// Axes outermost first: size-1 axes dropped, ordered by the destination's steps (the
// smallest last), neighbours that are one run on both sides merged.
struct Plan {
  CopyAxis axes[kMaxCopyAxes];
  int count = 0;
};

Plan Normalize(absl::Span<const CopyAxis> in) {
  Plan p;
  for (const CopyAxis& a : in) {
    if (a.size > 1) p.axes[p.count++] = a;
  }
  std::stable_sort(p.axes, p.axes + p.count, [](const CopyAxis& a, const CopyAxis& b) {
    if (std::llabs(a.dst_stride) != std::llabs(b.dst_stride)) {
      return std::llabs(a.dst_stride) > std::llabs(b.dst_stride);
    }
    return std::llabs(a.src_stride) > std::llabs(b.src_stride);
  });
  int merged = 0;
  for (int i = 0; i < p.count; ++i) {
    CopyAxis a = p.axes[i];
    if (merged > 0) {
      CopyAxis& outer = p.axes[merged - 1];
      if (outer.dst_stride == a.dst_stride * a.size && outer.src_stride == a.src_stride * a.size) {
        a.size *= outer.size;
        outer = a;
        continue;
      }
    }
    p.axes[merged++] = a;
  }
  p.count = merged;
  return p;
}

// Calls `fn(dst, src)` at every position of `axes` (outermost first).
template <typename Fn>
void ForEach(const CopyAxis* axes, int count, uint8_t* dst, const uint8_t* src, Fn&& fn) {
  int64_t index[kMaxCopyAxes] = {};
  while (true) {
    fn(dst, src);
    int k = count - 1;
    for (; k >= 0; --k) {
      dst += axes[k].dst_stride;
      src += axes[k].src_stride;
      if (++index[k] < axes[k].size) break;
      dst -= axes[k].dst_stride * axes[k].size;
      src -= axes[k].src_stride * axes[k].size;
      index[k] = 0;
    }
    if (k < 0) return;
  }
}

#if defined(__SSE2__)
// Interleaves the low (kHigh false) or high halves of two registers, `kBytes` at a time.
template <size_t kBytes, bool kHigh>
__m128i Unpack(__m128i a, __m128i b) {
  if constexpr (kBytes == 1) return kHigh ? _mm_unpackhi_epi8(a, b) : _mm_unpacklo_epi8(a, b);
  if constexpr (kBytes == 2) return kHigh ? _mm_unpackhi_epi16(a, b) : _mm_unpacklo_epi16(a, b);
  if constexpr (kBytes == 4) return kHigh ? _mm_unpackhi_epi32(a, b) : _mm_unpacklo_epi32(a, b);
  if constexpr (kBytes == 8) return kHigh ? _mm_unpackhi_epi64(a, b) : _mm_unpacklo_epi64(a, b);
}

// Transposes one square of 16 bytes a side: rows of `src` (`src_step` apart) become
// rows of `dst` (`dst_step` apart). log2(rows) rounds, each interleaving row m with row
// m + rows/2, leave the square transposed.
template <size_t kBytes, bool kStream>
void Square(uint8_t* dst, int64_t dst_step, const uint8_t* src, int64_t src_step) {
  constexpr int kRows = 16 / kBytes;
  __m128i r[kRows], t[kRows];
  for (int m = 0; m < kRows; ++m) {
    r[m] = _mm_loadu_si128(reinterpret_cast<const __m128i*>(src + m * src_step));
  }
  for (int round = 1; round < kRows; round *= 2) {
    for (int m = 0; m < kRows / 2; ++m) {
      t[2 * m] = Unpack<kBytes, false>(r[m], r[m + kRows / 2]);
      t[2 * m + 1] = Unpack<kBytes, true>(r[m], r[m + kRows / 2]);
    }
    std::copy(t, t + kRows, r);
  }
  for (int m = 0; m < kRows; ++m) {
    auto* to = reinterpret_cast<__m128i*>(dst + m * dst_step);
    if constexpr (kStream) {
      _mm_stream_si128(to, r[m]);
    } else {
      _mm_storeu_si128(to, r[m]);
    }
  }
}

// Every square of tile [i0, i1) x [j0, j1), one row of squares of the destination after
// another, so that only that row's destination lines are being written at a time.
template <size_t kBytes, bool kStream>
void Squares(uint8_t* dst, const uint8_t* src, const CopyAxis& i_axis, const CopyAxis& j_axis,
             int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  constexpr int64_t e = kBytes, square = 16 / kBytes;
  for (int64_t j = j0; j < j1; j += square) {
    for (int64_t i = i0; i < i1; i += square) {
      Square<kBytes, kStream>(dst + i * e + j * j_axis.dst_stride, j_axis.dst_stride,
                              src + i * i_axis.src_stride + j * e, i_axis.src_stride);
    }
  }
}
#endif

// Rows of the SSE square that transposes elements of `kBytes`; 1 where there is none.
template <size_t kBytes>
constexpr int64_t SquareRows() {
#if defined(__SSE2__)
  if (kBytes >= 1 && kBytes <= 8) return 16 / kBytes;
#endif
  return 1;
}

// Rows [i0, i1) x columns [j0, j1) of a transpose, one element at a time.
template <typename Move>
void Scalar(uint8_t* dst, const uint8_t* src, const CopyAxis& i_axis, const CopyAxis& j_axis,
            int64_t i0, int64_t i1, int64_t j0, int64_t j1, Move move) {
  const int64_t e = static_cast<int64_t>(move.bytes());
  for (int64_t j = j0; j < j1; ++j) {
    for (int64_t i = i0; i < i1; ++i) {
      move(dst + i * e + j * j_axis.dst_stride, src + i * i_axis.src_stride + j * e);
    }
  }
}

// dst[i, j] = src[i, j] where `i` is contiguous in dst and `j` in src: tiles of a cache
// line a side, each moved as SSE squares where the width allows.
template <typename Move>
void Transpose(uint8_t* dst, const uint8_t* src, const CopyAxis& i_axis, const CopyAxis& j_axis,
               Move move) {
  const int64_t e = static_cast<int64_t>(move.bytes());
  constexpr int64_t square = SquareRows<Move::kWidth>();
  const int64_t tile = std::max<int64_t>(4, 64 / e);
  const int64_t i_end = i_axis.size - i_axis.size % square;
  const int64_t j_end = j_axis.size - j_axis.size % square;
  // Transposes of 16 KiB or more whose destination rows start on cache lines skip the cache
  // on the way out: tiles write their lines whole (but at a row's end), so reading them
  // first is wasted.
  const bool stream = square > 1 && i_end * j_end * e >= 16 * 1024 &&
                      reinterpret_cast<uintptr_t>(dst) % 64 == 0 && j_axis.dst_stride % 64 == 0;
  for (int64_t i0 = 0; i0 < i_end; i0 += tile) {
    const int64_t i1 = std::min(i_end, i0 + tile);
    for (int64_t j0 = 0; j0 < j_end; j0 += tile) {
      const int64_t j1 = std::min(j_end, j0 + tile);
      if constexpr (square == 1) {
        Scalar(dst, src, i_axis, j_axis, i0, i1, j0, j1, move);
      } else {
#if defined(__SSE2__)
        if (stream) {
          Squares<Move::kWidth, true>(dst, src, i_axis, j_axis, i0, i1, j0, j1);
        } else {
          Squares<Move::kWidth, false>(dst, src, i_axis, j_axis, i0, i1, j0, j1);
        }
#endif
      }
    }
  }
#if defined(__SSE2__)
  if (stream) _mm_sfence();
#endif
  Scalar(dst, src, i_axis, j_axis, i_end, i_axis.size, 0, j_axis.size, move);
  Scalar(dst, src, i_axis, j_axis, 0, i_end, j_end, j_axis.size, move);
}

template <typename Move>
void Run(const Plan& p, uint8_t* dst, const uint8_t* src, Move move) {
  const int64_t e = static_cast<int64_t>(move.bytes());
  if (p.count == 0) return move(dst, src);
  const CopyAxis& inner = p.axes[p.count - 1];
  if (inner.dst_stride == e && inner.src_stride == e) {
    const size_t row = static_cast<size_t>(inner.size * e);
    return ForEach(p.axes, p.count - 1, dst, src,
                   [row](uint8_t* d, const uint8_t* s) { CopyBytes(d, s, row); });
  }
  if (inner.dst_stride == e) {
    for (int j = 0; j < p.count - 1; ++j) {
      if (p.axes[j].src_stride != e) continue;
      CopyAxis outer[kMaxCopyAxes];
      int n = 0;
      for (int k = 0; k < p.count - 1; ++k) {
        if (k != j) outer[n++] = p.axes[k];
      }
      const CopyAxis j_axis = p.axes[j];
      return ForEach(outer, n, dst, src,
                     [&](uint8_t* d, const uint8_t* s) { Transpose(d, s, inner, j_axis, move); });
    }
  }
  ForEach(p.axes, p.count - 1, dst, src, [&](uint8_t* d, const uint8_t* s) {
    for (int64_t i = 0; i < inner.size; ++i)
      move(d + i * inner.dst_stride, s + i * inner.src_stride);
  });
}

}  // namespace

absl::Status StridedCopy(void* dst, const void* src, absl::Span<const CopyAxis> axes,
                         size_t elem_bytes) {
  if (axes.size() > kMaxCopyAxes) {
    return absl::InvalidArgumentError(
        absl::StrCat("a copy of ", axes.size(), " axes; at most ", kMaxCopyAxes));
  }
  if (elem_bytes == 0) return absl::InvalidArgumentError("a copy of 0-byte elements");
  for (const CopyAxis& a : axes) {
    if (a.size < 0) return absl::InvalidArgumentError(absl::StrCat("an axis of size ", a.size));
    if (a.size == 0) return absl::OkStatus();
  }
  const Plan plan = Normalize(axes);
  WithMove(elem_bytes, [&](auto move) {
    Run(plan, static_cast<uint8_t*>(dst), static_cast<const uint8_t*>(src), move);
  });
  return absl::OkStatus();
}

}  // namespace kvstash::python
