// FetchAdvisor: fetch time at each tier's observed bandwidth against the engine's prefill
// time; bandwidths are averaged as seconds per byte because time, not rate, is what adds up.
#include "kvstash/fetch_advisor.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>

#include "absl/strings/str_cat.h"

namespace kvstash {
namespace {

// Slot of a fetchable tier in FetchAdvisor::tiers_, -1 for kNone (and unknown values).
int TierSlot(ChunkTier tier) {
  switch (tier) {
    case ChunkTier::kGpu:
      return 0;
    case ChunkTier::kDram:
      return 1;
    case ChunkTier::kNvme:
      return 2;
    default:
      return -1;
  }
}

absl::Status CheckPositive(absl::string_view field, double value) {
  if (std::isfinite(value) && value > 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("FetchAdvisorOptions.", field, " = ", value, " must be finite and > 0"));
}

absl::Status CheckNonNegative(absl::string_view field, double value) {
  if (std::isfinite(value) && value >= 0) return absl::OkStatus();
  return absl::InvalidArgumentError(
      absl::StrCat("FetchAdvisorOptions.", field, " = ", value, " must be finite and >= 0"));
}

}  // namespace

double PrefillModel::Seconds(uint64_t tokens, uint64_t context_tokens) const {
  const double n = static_cast<double>(tokens);
  const double attended = static_cast<double>(context_tokens) + (n + 1) / 2;
  return n / tokens_per_s + attention_s_per_token2 * n * attended;
}

absl::Status FetchAdvisorOptions::Validate() const {
  if (kv_bytes_per_token == 0) {
    return absl::InvalidArgumentError(
        "FetchAdvisorOptions.kv_bytes_per_token must be > 0 (bytes of KV per token of the "
        "model, e.g. 131072 for Llama-3-8B fp16)");
  }
  absl::Status s = CheckPositive("prefill.tokens_per_s", prefill.tokens_per_s);
  if (s.ok())
    s = CheckNonNegative("prefill.attention_s_per_token2", prefill.attention_s_per_token2);
  if (s.ok()) s = CheckPositive("gpu_bytes_per_s", gpu_bytes_per_s);
  if (s.ok()) s = CheckPositive("dram_bytes_per_s", dram_bytes_per_s);
  if (s.ok()) s = CheckPositive("nvme_bytes_per_s", nvme_bytes_per_s);
  if (s.ok()) s = CheckNonNegative("fixed_fetch_s", fixed_fetch_s);
  if (s.ok()) s = CheckPositive("fetch_margin", fetch_margin);
  if (s.ok() && !(ewma_weight > 0 && ewma_weight <= 1)) {
    s = absl::InvalidArgumentError(
        absl::StrCat("FetchAdvisorOptions.ewma_weight = ", ewma_weight, " must be in (0, 1]"));
  }
  return s;
}

absl::StatusOr<std::unique_ptr<FetchAdvisor>> FetchAdvisor::Create(
    const FetchAdvisorOptions& options) {
  if (absl::Status s = options.Validate(); !s.ok()) return s;
  return std::unique_ptr<FetchAdvisor>(new FetchAdvisor(options));
}

FetchAdvisor::FetchAdvisor(const FetchAdvisorOptions& options) : options_(options) {
  tiers_[TierSlot(ChunkTier::kGpu)].seconds_per_byte = 1 / options.gpu_bytes_per_s;
  tiers_[TierSlot(ChunkTier::kDram)].seconds_per_byte = 1 / options.dram_bytes_per_s;
  tiers_[TierSlot(ChunkTier::kNvme)].seconds_per_byte = 1 / options.nvme_bytes_per_s;
}

void FetchAdvisor::RecordFetch(ChunkTier tier, uint64_t bytes, double seconds) {
  const int slot = TierSlot(tier);
  if (slot < 0 || bytes == 0 || !std::isfinite(seconds)) return;
  const double transfer_s = seconds - options_.fixed_fetch_s;
  if (!(transfer_s > 0)) return;
  const double observed = transfer_s / static_cast<double>(bytes);
  absl::MutexLock lock(&mu_);
  TierEstimate& t = tiers_[slot];
  t.seconds_per_byte =
      t.observations == 0
          ? observed
          : t.seconds_per_byte + options_.ewma_weight * (observed - t.seconds_per_byte);
  ++t.observations;
}

double FetchAdvisor::SecondsPerByte(ChunkTier tier) const {
  absl::MutexLock lock(&mu_);
  return tiers_[TierSlot(tier)].seconds_per_byte;
}

double FetchAdvisor::BandwidthBytesPerSecond(ChunkTier tier) const {
  if (TierSlot(tier) < 0) return 0;
  return 1 / SecondsPerByte(tier);
}

uint64_t FetchAdvisor::Observations(ChunkTier tier) const {
  const int slot = TierSlot(tier);
  if (slot < 0) return 0;
  absl::MutexLock lock(&mu_);
  return tiers_[slot].observations;
}

double FetchAdvisor::FetchSeconds(uint64_t tokens, ChunkTier tier) const {
  if (TierSlot(tier) < 0) return std::numeric_limits<double>::infinity();
  const double bytes = static_cast<double>(tokens) * options_.kv_bytes_per_token;
  return options_.fixed_fetch_s + bytes * SecondsPerByte(tier);
}

double FetchAdvisor::RecomputeSeconds(uint64_t tokens, uint64_t context_tokens) const {
  return options_.prefill.Seconds(tokens, context_tokens);
}

bool FetchAdvisor::ShouldFetch(uint64_t tokens, ChunkTier tier, uint64_t context_tokens) const {
  return FetchSeconds(tokens, tier) * options_.fetch_margin <=
         RecomputeSeconds(tokens, context_tokens);
}

uint32_t FetchAdvisor::ChunksToFetch(absl::Span<const ChunkTier> tiers, uint32_t chunk_tokens,
                                     uint64_t prompt_tokens, uint64_t context_tokens) const {
  if (chunk_tokens == 0) return 0;
  std::array<double, kTiers> spb;
  {
    absl::MutexLock lock(&mu_);
    for (int i = 0; i < kTiers; ++i) spb[i] = tiers_[i].seconds_per_byte;
  }
  const double chunk_bytes = static_cast<double>(chunk_tokens) * options_.kv_bytes_per_token;
  const uint64_t max_chunks = std::min<uint64_t>(tiers.size(), prompt_tokens / chunk_tokens);
  // cost(k) = margin x (time to fetch chunks [0, k)) + time to prefill the rest after them.
  uint32_t best = 0;
  double best_cost = RecomputeSeconds(prompt_tokens, context_tokens);
  double fetch_s = options_.fixed_fetch_s;
  for (uint64_t k = 1; k <= max_chunks; ++k) {
    const int slot = TierSlot(tiers[k - 1]);
    if (slot < 0) break;
    fetch_s += chunk_bytes * spb[slot];
    const uint64_t cached = k * chunk_tokens;
    const double cost = fetch_s * options_.fetch_margin +
                        RecomputeSeconds(prompt_tokens - cached, context_tokens + cached);
    if (cost <= best_cost) {
      best_cost = cost;
      best = static_cast<uint32_t>(k);
    }
  }
  return best;
}

}  // namespace kvstash
