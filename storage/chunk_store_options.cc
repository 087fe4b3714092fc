// ChunkStoreOptions::Validate: every message names the offending field, since it reaches
// the operator verbatim when the daemon refuses its config.
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/bits.h"
#include "storage/chunk_store.h"
#include "storage/nvme/cleaner.h"
#include "storage/nvme/nvme_options.h"
#include "storage/policy/eviction_policy.h"
#include "storage/policy/policies.h"
#include "storage/tenant_quota_config.h"

namespace kvstash::storage {
namespace {

constexpr uint64_t kMinPageBytes = 4096;
constexpr uint64_t kMaxPageBytes = 1ull << 30;
constexpr int kMaxIndexShards = 1 << 16;

absl::Status ValidateDram(const ChunkStoreOptions& o) {
  using HugePages = ChunkStoreOptions::HugePages;
  if (!IsPowerOfTwo(o.page_bytes) || o.page_bytes < kMinPageBytes || o.page_bytes > kMaxPageBytes) {
    return absl::InvalidArgumentError(absl::StrCat("page_bytes must be a power of two between ",
                                                   kMinPageBytes, " and ", kMaxPageBytes, " (got ",
                                                   o.page_bytes, ")"));
  }
  if (o.dram_capacity_bytes < o.page_bytes) {
    return absl::InvalidArgumentError(absl::StrCat("dram_capacity_bytes must be >= page_bytes (",
                                                   o.dram_capacity_bytes, " < ", o.page_bytes,
                                                   ")"));
  }
  if (o.dram_capacity_bytes / o.page_bytes >= (1ull << 31)) {
    return absl::InvalidArgumentError(
        "dram_capacity_bytes / page_bytes must be < 2^31 pages: raise page_bytes");
  }
  if (o.huge_pages != HugePages::kOff && o.huge_pages != HugePages::kAuto &&
      o.huge_pages != HugePages::kOn) {
    return absl::InvalidArgumentError("huge_pages must be off, auto or on");
  }
  if (o.max_chunk_bytes == 0) {
    return absl::InvalidArgumentError("max_chunk_bytes must be > 0");
  }
  return absl::OkStatus();
}

constexpr int kMaxNvmeThreads = NvmeOptions::kMaxThreads;

absl::Status ValidateNvme(const ChunkStoreOptions::Nvme& n) {
  if (n.path.empty()) return absl::OkStatus();  // tier off: the rest is ignored
  if (absl::Status s = NvmeTierOptions(n).Validate(); !s.ok()) return s;
  if (n.admission_min_hits < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("nvme.admission_min_hits must be >= 0 (got ", n.admission_min_hits, ")"));
  }
  if (n.clean_window_percent != 0) {
    CleanerOptions cleaner;
    cleaner.window_percent = n.clean_window_percent;
    if (absl::Status s = cleaner.Validate(); !s.ok()) return s;
  }
  if (n.demotion_wait_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("nvme.demotion_wait_ms must be >= 0 (got ", n.demotion_wait_ms, ")"));
  }
  if (n.demotion_threads < 1 || n.demotion_threads > kMaxNvmeThreads) {
    return absl::InvalidArgumentError(absl::StrCat("nvme.demotion_threads must be between 1 and ",
                                                   kMaxNvmeThreads, " (got ", n.demotion_threads,
                                                   ")"));
  }
  if (n.read_threads < 1 || n.read_threads > kMaxNvmeThreads) {
    return absl::InvalidArgumentError(absl::StrCat("nvme.read_threads must be between 1 and ",
                                                   kMaxNvmeThreads, " (got ", n.read_threads, ")"));
  }
  if (n.demotion_queue_chunks < 1) {
    return absl::InvalidArgumentError(absl::StrCat("nvme.demotion_queue_chunks must be >= 1 (got ",
                                                   n.demotion_queue_chunks, ")"));
  }
  return absl::OkStatus();
}

}  // namespace

absl::Status ChunkStoreOptions::Validate() const {
  if (absl::Status s = ValidateDram(*this); !s.ok()) return s;
  if (absl::Status s = ValidateNvme(nvme); !s.ok()) return s;
  if (index_shards < 1 || index_shards > kMaxIndexShards ||
      !IsPowerOfTwo(static_cast<uint64_t>(index_shards))) {
    return absl::InvalidArgumentError(
        absl::StrCat("index_shards must be a power of two between 1 and ", kMaxIndexShards,
                     " (got ", index_shards, ")"));
  }
  if (max_lease < absl::ZeroDuration()) {
    return absl::InvalidArgumentError("max_lease must be >= 0");
  }
  if (sessions.idle_timeout_ms < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sessions.idle_timeout_ms must be >= 1 (got ", sessions.idle_timeout_ms, ")"));
  }
  if (sessions.max_sessions < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("sessions.max_sessions must be >= 1 (got ", sessions.max_sessions, ")"));
  }
  if (absl::Status s = ParseTenantQuotas(tenants).status(); !s.ok()) return s;
  return CreateEvictionPolicy(dram_eviction, "dram_eviction").status();
}

}  // namespace kvstash::storage
