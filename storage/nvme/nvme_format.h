// On-disk encoding of the NVMe tier's keys and metadata values (see docs/storage-format.md).
// Kept apart from RocksDbTier so the format is tested on its own and a future reader (an
// offline fsck, a migration) links only this.
//
// Thread-safety: pure functions.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "absl/strings/string_view.h"
#include "storage/chunk.h"

namespace kvstash::storage::nvme {

// Column family names. "default" holds only the format marker.
inline constexpr char kPayloadFamily[] = "payload";
inline constexpr char kMetaFamily[] = "meta";
// Key in "default" whose value is the format version of the whole database.
inline constexpr char kFormatKey[] = "kvstash.format";
inline constexpr uint8_t kFormatVersion = 1;

// ns id (16 bytes) || chunk key (16 bytes): big-endian-free raw hash bytes, so keys of one
// namespace are adjacent and a namespace can be dropped with one DeleteRange later.
inline constexpr size_t kKeyBytes = 32;
// Version byte + size u64 + tokens u32 + format u32 + checksum u64 + sequence u64.
inline constexpr uint8_t kMetaVersion = 1;
inline constexpr size_t kMetaBytes = 1 + 8 + 4 + 4 + 8 + 8;

// What the metadata family records about one chunk.
struct MetaRecord {
  ChunkMeta meta;         // checksum is always the real XXH3-64 of the payload
  uint64_t sequence = 0;  // insertion or last persisted access; orders approximate LRU
};

std::string EncodeKey(const ChunkId& id);
// nullopt unless `key` is kKeyBytes long.
std::optional<ChunkId> DecodeKey(absl::string_view key);

// Fixed-width little-endian fields after the version byte.
std::string EncodeMeta(const MetaRecord& record);
// nullopt for an unknown version byte or a wrong length (the record is then skipped and
// deleted at start-up rather than trusted).
std::optional<MetaRecord> DecodeMeta(absl::string_view value);

}  // namespace kvstash::storage::nvme
