#include "storage/chunk.h"

#include <cstring>

namespace kvstash::storage {

void StoredChunk::CopyTo(void* dst) const {
  auto* out = static_cast<uint8_t*>(dst);
  for (const Segment& s : segments()) {
    std::memcpy(out, s.data, s.size);
    out += s.size;
  }
}

}  // namespace kvstash::storage
