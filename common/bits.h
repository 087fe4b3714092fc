// Bit arithmetic shared by config validation and the allocators.
//
// Thread-safety: functions of their arguments.
#pragma once

#include <cstdint>

namespace kvstash {

constexpr bool IsPowerOfTwo(uint64_t v) { return v != 0 && (v & (v - 1)) == 0; }

}  // namespace kvstash
