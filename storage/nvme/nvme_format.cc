#include "storage/nvme/nvme_format.h"

#include <cstring>

namespace kvstash::storage::nvme {
namespace {

// The daemon only runs on little-endian hosts (x86-64, aarch64); memcpy of the native
// representation is the little-endian encoding there.
static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "encoding assumes little-endian");

template <typename T>
void Put(std::string* out, T v) {
  char buf[sizeof(T)];
  std::memcpy(buf, &v, sizeof(T));
  out->append(buf, sizeof(T));
}

template <typename T>
T Get(const char*& p) {
  T v;
  std::memcpy(&v, p, sizeof(T));
  p += sizeof(T);
  return v;
}

}  // namespace

std::string EncodeKey(const ChunkId& id) {
  std::string out;
  out.reserve(kKeyBytes);
  out.append(reinterpret_cast<const char*>(id.ns.data()), id.ns.size());
  out.append(reinterpret_cast<const char*>(id.key.data()), id.key.size());
  return out;
}

std::optional<ChunkId> DecodeKey(absl::string_view key) {
  if (key.size() != kKeyBytes) return std::nullopt;
  ChunkId id;
  std::memcpy(id.ns.data(), key.data(), 16);
  std::memcpy(id.key.data(), key.data() + 16, 16);
  return id;
}

std::string EncodeMeta(const MetaRecord& r) {
  std::string out;
  out.reserve(kMetaBytes);
  out.push_back(static_cast<char>(kMetaVersion));
  Put<uint64_t>(&out, r.meta.size_bytes);
  Put<uint32_t>(&out, r.meta.tokens);
  Put<uint32_t>(&out, r.meta.format);
  Put<uint64_t>(&out, r.meta.checksum);
  Put<uint64_t>(&out, r.sequence);
  return out;
}

std::optional<MetaRecord> DecodeMeta(absl::string_view value) {
  if (value.size() != kMetaBytes || static_cast<uint8_t>(value[0]) != kMetaVersion) {
    return std::nullopt;
  }
  const char* p = value.data() + 1;
  MetaRecord r;
  r.meta.size_bytes = Get<uint64_t>(p);
  r.meta.tokens = Get<uint32_t>(p);
  r.meta.format = Get<uint32_t>(p);
  r.meta.checksum = Get<uint64_t>(p);
  r.sequence = Get<uint64_t>(p);
  return r;
}

}  // namespace kvstash::storage::nvme
