#include "storage/nvme/rocksdb_crc32c.h"

#include <dlfcn.h>
#include <nmmintrin.h>

#include <algorithm>
#include <cstring>

// RocksDB's declaration (its util/crc32c.h is not installed); defined at the end.
namespace rocksdb::crc32c {
uint32_t Extend(uint32_t init_crc, const char* data, size_t n);
}  // namespace rocksdb::crc32c

namespace kvstash::storage {
namespace {

// RocksDB 7.x's rocksdb::crc32c::Extend(uint32_t, const char*, size_t), mangled.
constexpr char kRocksDbExtend[] = "_ZN7rocksdb6crc32c6ExtendEjPKcm";

using ExtendFn = uint32_t (*)(uint32_t, const char*, size_t);

// CRC state is linear over GF(2): the state after a block B from state s is
// Shift(s, |B|) ^ (the state after B from 0). Three lanes over consecutive blocks therefore
// run independent `crc32` chains (the instruction has a 3-cycle latency but issues every
// cycle) and are joined with a shift by one lane length, a linear map applied with four
// 256-entry tables built once.
constexpr size_t kLaneBytes = 8192;

uint32_t BitwiseStep(uint32_t c, int bits) {
  for (int k = 0; k < bits; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  return c;
}

// Shift of a raw CRC state over kLaneBytes zero bytes, as tables of the images of each
// byte position.
struct LaneShift {
  uint32_t table[4][256];
  LaneShift() {
    // Image of each basis bit, by running it through kLaneBytes * 8 zero bits.
    uint32_t basis[32];
    for (int i = 0; i < 32; ++i) basis[i] = BitwiseStep(1u << i, kLaneBytes * 8);
    for (int k = 0; k < 4; ++k) {
      for (uint32_t v = 0; v < 256; ++v) {
        uint32_t image = 0;
        for (int bit = 0; bit < 8; ++bit) {
          if (v & (1u << bit)) image ^= basis[8 * k + bit];
        }
        table[k][v] = image;
      }
    }
  }
  uint32_t operator()(uint32_t c) const {
    return table[0][c & 0xff] ^ table[1][(c >> 8) & 0xff] ^ table[2][(c >> 16) & 0xff] ^
           table[3][c >> 24];
  }
};

inline uint64_t Load64(const char* p) {
  uint64_t word;
  std::memcpy(&word, p, sizeof(word));
  return word;
}

__attribute__((target("sse4.2"))) uint64_t Bytes(uint64_t c, const char* data, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<uint8_t>(data[i]));
  }
  return c;
}

__attribute__((target("sse4.2"))) uint64_t Words(uint64_t c, const char* data, size_t words) {
  for (size_t i = 0; i < words; ++i) c = _mm_crc32_u64(c, Load64(data + 8 * i));
  return c;
}

__attribute__((target("sse4.2"))) uint32_t HardwareExtend(uint32_t crc, const char* data,
                                                          size_t n) {
  static const LaneShift shift;
  uint64_t c = crc ^ 0xffffffffu;
  // Up to 8-byte alignment, then three lanes at a time, then words, then the last bytes.
  const size_t head = std::min<size_t>(n, (8 - reinterpret_cast<uintptr_t>(data) % 8) % 8);
  c = Bytes(c, data, head);
  data += head;
  n -= head;
  for (; n >= 3 * kLaneBytes; n -= 3 * kLaneBytes, data += 3 * kLaneBytes) {
    uint64_t a = c, b = 0, d = 0;
    for (size_t i = 0; i < kLaneBytes; i += 8) {
      a = _mm_crc32_u64(a, Load64(data + i));
      b = _mm_crc32_u64(b, Load64(data + kLaneBytes + i));
      d = _mm_crc32_u64(d, Load64(data + 2 * kLaneBytes + i));
    }
    c = shift(shift(static_cast<uint32_t>(a)) ^ static_cast<uint32_t>(b)) ^
        static_cast<uint32_t>(d);
  }
  c = Words(c, data, n / 8);
  c = Bytes(c, data + n / 8 * 8, n % 8);
  return static_cast<uint32_t>(c) ^ 0xffffffffu;
}

// Bit by bit (reflected polynomial 0x82f63b78): used only if RocksDB's own definition
// cannot be found either.
uint32_t BitwiseExtend(uint32_t crc, const char* data, size_t n) {
  uint32_t c = crc ^ 0xffffffffu;
  for (size_t i = 0; i < n; ++i) c = BitwiseStep(c ^ static_cast<uint8_t>(data[i]), 8);
  return c ^ 0xffffffffu;
}

// RocksDB's own definition, the next one after this binary's in symbol lookup order.
ExtendFn RocksDbExtend() {
  static const ExtendFn fn = [] {
    void* next = dlsym(RTLD_NEXT, kRocksDbExtend);
    return next != nullptr ? reinterpret_cast<ExtendFn>(next) : &BitwiseExtend;
  }();
  return fn;
}

bool HaveSse42() {
  static const bool have = [] {
    __builtin_cpu_init();  // may run before the compiler's own CPU-model initializer
    return __builtin_cpu_supports("sse4.2") != 0;
  }();
  return have;
}

}  // namespace

uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n) {
  if (HaveSse42()) return HardwareExtend(crc, data, n);
  return RocksDbExtend()(crc, data, n);
}

const char* RocksDbCrc32cImplementation() {
  const void* bound = dlsym(RTLD_DEFAULT, kRocksDbExtend);
  const bool ours = bound == reinterpret_cast<const void*>(&rocksdb::crc32c::Extend);
  return ours && HaveSse42() ? "sse4.2" : "rocksdb";
}

}  // namespace kvstash::storage

// The override itself.
namespace rocksdb::crc32c {
uint32_t Extend(uint32_t init_crc, const char* data, size_t n) {
  return kvstash::storage::Crc32cExtend(init_crc, data, n);
}
}  // namespace rocksdb::crc32c
