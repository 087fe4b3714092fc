#include "storage/rocksdb_crc32c.h"

#include <dlfcn.h>
#include <nmmintrin.h>

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

__attribute__((target("sse4.2"))) uint32_t HardwareExtend(uint32_t crc, const char* data,
                                                          size_t n) {
  uint64_t c = crc ^ 0xffffffffu;
  for (; n > 0 && (reinterpret_cast<uintptr_t>(data) & 7) != 0; --n) {
    c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<uint8_t>(*data++));
  }
  for (; n >= 8; n -= 8, data += 8) {
    uint64_t word;
    std::memcpy(&word, data, sizeof(word));
    c = _mm_crc32_u64(c, word);
  }
  for (; n > 0; --n) c = _mm_crc32_u8(static_cast<uint32_t>(c), static_cast<uint8_t>(*data++));
  return static_cast<uint32_t>(c) ^ 0xffffffffu;
}

// Bit by bit (reflected polynomial 0x82f63b78): used only if RocksDB's own definition
// cannot be found either.
uint32_t BitwiseExtend(uint32_t crc, const char* data, size_t n) {
  uint32_t c = crc ^ 0xffffffffu;
  for (size_t i = 0; i < n; ++i) {
    c ^= static_cast<uint8_t>(data[i]);
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0x82f63b78u & (0u - (c & 1u)));
  }
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
  static const bool have = __builtin_cpu_supports("sse4.2");
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
