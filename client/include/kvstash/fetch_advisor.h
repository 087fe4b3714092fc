// FetchAdvisor: decides whether fetching cached KV from kvstash beats recomputing it, so a
// slow tier (a throttled or busy NVMe, a congested link) never makes time-to-first-token
// worse than prefilling the tokens again.
//
//   auto advisor = kvstash::FetchAdvisor::Create({.kv_bytes_per_token = 128 << 10});
//   auto hits = client->Lookup(ns, keys);
//   uint32_t n = (*advisor)->ChunksToFetch(hits->tiers, chunk_tokens, prompt_tokens);
//   // fetch the first n chunks, time the Get, then:
//   (*advisor)->RecordFetch(kvstash::ChunkTier::kDram, bytes, seconds);
//
// Fetch time is fixed_fetch_s + bytes / (the tier's bandwidth), the bandwidth starting at
// a prior and then following the fetches the caller records (an exponentially weighted
// average of seconds per byte). Recompute time is a PrefillModel of the engine. The
// defaults describe Llama-3-8B in fp16 on one H100; calibrate both for other setups.
//
// Thread-safety: PrefillModel and FetchAdvisorOptions are plain values. FetchAdvisor is
// thread-safe: RecordFetch and the queries may run concurrently from many threads.
#pragma once

#include <array>
#include <cstdint>
#include <memory>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/types/span.h"
#include "kvstash/client.h"

namespace kvstash {

// Seconds an engine spends prefilling `tokens` new tokens after `context_tokens` already
// cached ones: tokens / tokens_per_s (the weights' matrix products, linear in tokens) plus
// attention_s_per_token2 x tokens x (context_tokens + (tokens + 1) / 2) (every new token
// attends to the context and, causally, to the new tokens before it).
//
// Defaults: Llama-3-8B (8.03e9 parameters, 32 layers, 32 query heads of dimension 128;
// Meta's model card and config.json) on one H100 SXM (989 TFLOPS dense BF16; NVIDIA's
// H100 datasheet) at one third of peak, a typical model-FLOPs utilisation of prefill.
// They are a compute estimate, not a measurement of one engine: calibrate them by timing
// the engine's prefill at two prompt lengths (README "Fetch or recompute").
struct PrefillModel {
  // 989e12 FLOP/s / 3 / (2 FLOPs x 8.03e9 parameters per token) ~= 20500 tokens/s.
  double tokens_per_s = 20000.0;
  // s per (new token x context token): QK^T and PV cost 4 x layers x heads x head_dim =
  // 524288 FLOPs per pair; at 989e12 / 3 FLOP/s that is ~1.6e-9 s.
  double attention_s_per_token2 = 1.6e-9;

  // REQUIRES: Validate() of the FetchAdvisorOptions holding it is OK.
  double Seconds(uint64_t tokens, uint64_t context_tokens) const;
};

struct FetchAdvisorOptions {
  // The engine's prefill cost, the time a fetch must beat.
  PrefillModel prefill;
  // Bytes of KV per token (all layers, K and V): 131072 for Llama-3-8B fp16 (32 layers x 8
  // KV heads x 128 x 2 bytes x 2), 524288 for Llama-2-7B. REQUIRED > 0.
  uint64_t kv_bytes_per_token = 0;
  // Bandwidth of a fetch from each tier before any observation, bytes per second. A fetch
  // crosses the daemon's transport: DRAM and GPU hits default to 10 GB/s, below the 12.5
  // GB/s line rate of one 100 Gb/s NIC; NVMe hits to 2 GB/s, the 1.4-2.2 GB/s that fio
  // reads from one PCIe SSD on our build hosts (datasheets of PCIe 4.0 SSDs promise ~7,
  // but RocksDB reads and checksums come first).
  double gpu_bytes_per_s = 10e9;
  double dram_bytes_per_s = 10e9;
  double nvme_bytes_per_s = 2e9;
  // Latency of one fetch whatever its size (a request round trip): 64 KiB gets over gRPC
  // take ~150 us at p50 on loopback; 200 us leaves room for a real network.
  double fixed_fetch_s = 200e-6;
  // Weight of each new observation in the moving average, in (0, 1]: higher follows a
  // changing tier faster, lower rides out one slow fetch. The first observation of a tier
  // replaces its prior outright.
  double ewma_weight = 0.2;
  // Fetch when fetch_s * fetch_margin <= recompute_s; > 1 fetches only when clearly
  // faster (a fetch also costs the daemon and the network), < 1 favours fetching.
  double fetch_margin = 1.0;

  // INVALID_ARGUMENT naming the field when a value is out of range (zero or negative
  // rates, non-finite values, kv_bytes_per_token == 0, ewma_weight outside (0, 1]).
  absl::Status Validate() const;
};

// Fetch-or-recompute decisions for one engine and model (one kv_bytes_per_token), fed by
// the fetch times the engine observes. Thread-safe.
class FetchAdvisor {
 public:
  // A unique_ptr because the advisor owns a mutex (not movable). Fails with
  // INVALID_ARGUMENT when options.Validate() does.
  static absl::StatusOr<std::unique_ptr<FetchAdvisor>> Create(const FetchAdvisorOptions& options);

  // One completed fetch of `bytes` from `tier` that took `seconds` wall time (request sent
  // to last byte received). Its bandwidth is bytes / (seconds - fixed_fetch_s); a fetch
  // no slower than fixed_fetch_s carries no bandwidth information and is ignored, as are
  // tier kNone, bytes == 0 and non-finite or negative seconds.
  void RecordFetch(ChunkTier tier, uint64_t bytes, double seconds);
  // Current bandwidth estimate of `tier` (the prior until RecordFetch observed it); 0 for
  // kNone.
  double BandwidthBytesPerSecond(ChunkTier tier) const;
  // Fetches of `tier` RecordFetch has taken into account.
  uint64_t Observations(ChunkTier tier) const;

  // Seconds to fetch the KV of `tokens` tokens from `tier` in one request: fixed_fetch_s +
  // bytes / bandwidth. +infinity for kNone (nothing to fetch there).
  double FetchSeconds(uint64_t tokens, ChunkTier tier) const;
  // options.prefill.Seconds(tokens, context_tokens).
  double RecomputeSeconds(uint64_t tokens, uint64_t context_tokens) const;
  // True when fetching `tokens` tokens from `tier` (following `context_tokens` the engine
  // already has) is no slower than recomputing them: FetchSeconds x fetch_margin <=
  // RecomputeSeconds.
  bool ShouldFetch(uint64_t tokens, ChunkTier tier, uint64_t context_tokens = 0) const;
  // Of a lookup's hits (`tiers`, one per leading chunk, `chunk_tokens` tokens each), how
  // many leading chunks to fetch (in one request) so that fetching them and recomputing
  // the rest of the `prompt_tokens` prompt is fastest. Stops at the first kNone and at the
  // prompt's end; on a tie fetches more. 0 when no chunk is worth fetching. When the
  // engine already holds the first `context_tokens` of the prompt (its own prefix cache),
  // `tiers` and `prompt_tokens` describe what follows them, and recomputing attends to them.
  uint32_t ChunksToFetch(absl::Span<const ChunkTier> tiers, uint32_t chunk_tokens,
                         uint64_t prompt_tokens, uint64_t context_tokens = 0) const;

  const FetchAdvisorOptions& options() const { return options_; }

 private:
  explicit FetchAdvisor(const FetchAdvisorOptions& options);
  // Seconds per byte of `tier` (not kNone).
  double SecondsPerByte(ChunkTier tier) const;

  // One slot per fetchable tier: kGpu, kDram, kNvme.
  static constexpr int kTiers = 3;
  struct TierEstimate {
    double seconds_per_byte = 0;
    uint64_t observations = 0;
  };

  const FetchAdvisorOptions options_;
  mutable absl::Mutex mu_;
  std::array<TierEstimate, kTiers> tiers_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash
