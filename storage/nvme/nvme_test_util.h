// Helpers shared by the NVMe tier tests: a scratch directory, an in-memory StoredChunk and
// on-disk directory sizes. Test-only; no production target includes this header.
//
// Thread-safety: ScratchDir is owned by one test; the functions touch only their arguments.
#pragma once

#include <xxhash.h>

#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "storage/chunk.h"
#include "testing/temp_dir.h"

namespace kvstash::storage::testing {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it.
class ScratchDir {
 public:
  ScratchDir() : dir_(TempDir::Create("kvstash_nvme").value()) {}
  const std::string& path() const { return dir_->path(); }
  std::string Sub(const std::string& name) const { return dir_->Sub(name); }

 private:
  std::unique_ptr<TempDir> dir_;
};

// A chunk over its own copy of `bytes`, its checksum filled in like a committed put's.
class VectorChunk final : public StoredChunk {
 public:
  explicit VectorChunk(std::vector<uint8_t> bytes) : bytes_(std::move(bytes)) {
    meta_.size_bytes = bytes_.size();
    meta_.tokens = 16;
    meta_.format = 7;
    meta_.checksum = XXH3_64bits(bytes_.data(), bytes_.size());
    segment_ = {bytes_.data(), bytes_.size()};
  }
  const ChunkMeta& meta() const override { return meta_; }
  absl::Span<const Segment> segments() const override { return {&segment_, 1}; }

 private:
  std::vector<uint8_t> bytes_;
  ChunkMeta meta_;
  Segment segment_;
};

// Bytes of all regular files under `dir`, like `du --apparent-size -s`. Files RocksDB
// deletes while we walk are skipped.
inline uint64_t DirectoryBytes(const std::string& dir) {
  uint64_t total = 0;
  std::error_code ec;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    const uint64_t size = std::filesystem::file_size(e.path(), ec);
    if (!ec) total += size;
  }
  return total;
}

inline std::vector<std::string> FilesWithSuffix(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(dir)) {
    const std::string p = e.path().string();
    if (p.size() >= suffix.size() &&
        p.compare(p.size() - suffix.size(), suffix.size(), suffix) == 0) {
      out.push_back(p);
    }
  }
  return out;
}

}  // namespace kvstash::storage::testing
