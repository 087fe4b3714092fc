// The engine model of kvstash_workload: a model's KV shape (bytes per token, default chunk
// size) and its compute cost (prefill time growing with context, decode rate), from
// documented public figures, flags, or a calibration file measured on a real engine.
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstash/fetch_advisor.h"

namespace kvstash::bench::workload {

// What a model's KV cache looks like to a store.
struct ModelShape {
  std::string name;                 // "llama3-8b", "llama2-7b", "tiny"
  uint64_t kv_bytes_per_token = 0;  // K and V of every layer, fp16
  uint32_t chunk_tokens = 256;      // default tokens per stored chunk
  double params = 0;                // weights, for the FLOP count of the linear layers
  uint32_t layers = 0;
  uint32_t d_model = 0;  // hidden size, for the attention FLOPs per attended token
};

// Known shapes (bench/README.md gives their sources); NOT_FOUND names the known ones.
absl::StatusOr<ModelShape> ModelByName(absl::string_view name);

// Compute cost of one engine (one GPU). Prefill is the client's PrefillModel
// (kvstash/fetch_advisor.h), the very model FetchAdvisor weighs fetches against, so the
// benchmark's GPU and the advisor agree on what recomputing costs:
//   prefill_s(new, ctx) = new / tokens_per_s + attention_s_per_token2 * new * (ctx + (new + 1) / 2)
// Decode: decode_tokens_per_s per request.
struct CostModel {
  PrefillModel prefill;
  double decode_tokens_per_s = 0;

  double PrefillSeconds(uint64_t new_tokens, uint64_t cached_tokens) const;
  double DecodeSeconds(uint64_t tokens) const;
  absl::Status Validate() const;
};

// The GPU the defaults describe: dense bf16 TFLOP/s and the fraction of it prefill reaches.
// At these values Llama-3-8B gets PrefillModel's own defaults.
struct GpuSpec {
  double tflops = 989;   // NVIDIA H100 SXM, dense BF16 (datasheet)
  double mfu = 1.0 / 3;  // model FLOPs utilisation typical of prefill
  double decode_tokens_per_s = 50;
};

// PrefillModel's defaults (Llama-3-8B on GpuSpec{}) scaled by FLOPs: the linear term by
// 2 * params FLOPs per token (Kaplan et al. 2020, arXiv:2001.08361, Table 1), the attention
// term by layers * d_model per attended token (QK^T and PV), both by the GPU's tflops * mfu.
CostModel DefaultCost(const ModelShape& model, const GpuSpec& gpu);

// Overrides the fields named in a flat JSON object read from `path`:
//   {"prefill_tokens_per_s": 12000, "attention_s_per_token_ctx": 1e-9,
//    "decode_tokens_per_s": 40}
// (prefill.tokens_per_s, prefill.attention_s_per_token2 and decode_tokens_per_s).
// Unknown keys and malformed files are INVALID_ARGUMENT naming the file.
absl::Status ApplyCalibrationFile(const std::string& path, CostModel* cost);
// The same from text (for tests); `source` names it in errors.
absl::Status ApplyCalibration(absl::string_view json, absl::string_view source, CostModel* cost);

}  // namespace kvstash::bench::workload
