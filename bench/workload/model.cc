#include "bench/workload/model.h"

#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvstash::bench::workload {
namespace {

// KV bytes per token = 2 (K and V) * layers * kv_heads * head_dim * 2 bytes (fp16).
const ModelShape kModels[] = {
    // Meta-Llama-3-8B model card and config.json: 8.03e9 parameters, 32 layers, hidden
    // 4096, 8 KV heads of 128.
    {"llama3-8b", 2ull * 32 * 8 * 128 * 2, 256, 8.03e9, 32, 4096},
    // Llama-2-7b config.json: 32 layers, hidden 4096, 32 KV heads of 128 (no GQA).
    {"llama2-7b", 2ull * 32 * 32 * 128 * 2, 256, 6.7e9, 32, 4096},
    // A small model for quick runs: 8 layers, 2 KV heads of 64 (4 KiB per token).
    {"tiny", 2ull * 8 * 2 * 64 * 2, 16, 0.5e9, 8, 1024},
};

}  // namespace

absl::StatusOr<ModelShape> ModelByName(absl::string_view name) {
  std::vector<std::string> names;
  for (const ModelShape& m : kModels) {
    if (m.name == name) return m;
    names.push_back(m.name);
  }
  return absl::NotFoundError(
      absl::StrCat("unknown model '", name, "'; known: ", absl::StrJoin(names, ", ")));
}

double CostModel::PrefillSeconds(uint64_t new_tokens, uint64_t cached_tokens) const {
  const double n = static_cast<double>(new_tokens);
  const double ctx = static_cast<double>(cached_tokens) + (n + 1) / 2;
  return n / prefill_tokens_per_s + attention_s_per_token_ctx * n * ctx;
}

double CostModel::DecodeSeconds(uint64_t tokens) const {
  return static_cast<double>(tokens) / decode_tokens_per_s;
}

absl::Status CostModel::Validate() const {
  if (!(prefill_tokens_per_s > 0)) {
    return absl::InvalidArgumentError("prefill_tokens_per_s must be > 0");
  }
  if (!(attention_s_per_token_ctx >= 0)) {
    return absl::InvalidArgumentError("attention_s_per_token_ctx must be >= 0");
  }
  if (!(decode_tokens_per_s > 0)) {
    return absl::InvalidArgumentError("decode_tokens_per_s must be > 0");
  }
  return absl::OkStatus();
}

CostModel DefaultCost(const ModelShape& model, const GpuSpec& gpu) {
  const double flops_per_s = gpu.tflops * 1e12 * gpu.mfu;
  CostModel c;
  c.prefill_tokens_per_s = flops_per_s / (2 * model.params);
  c.attention_s_per_token_ctx = 4.0 * model.layers * model.d_model / flops_per_s;
  c.decode_tokens_per_s = gpu.decode_tokens_per_s;
  return c;
}

absl::Status ApplyCalibration(absl::string_view json, absl::string_view source, CostModel* cost) {
  auto bad = [&](absl::string_view why) {
    return absl::InvalidArgumentError(absl::StrCat(source, ": ", why));
  };
  absl::string_view body = absl::StripAsciiWhitespace(json);
  if (!absl::ConsumePrefix(&body, "{") || !absl::ConsumeSuffix(&body, "}")) {
    return bad("expected one JSON object of numbers");
  }
  for (absl::string_view member : absl::StrSplit(body, ',', absl::SkipWhitespace())) {
    std::pair<absl::string_view, absl::string_view> kv = absl::StrSplit(member, ':');
    absl::string_view key = absl::StripAsciiWhitespace(kv.first);
    double value = 0;
    if (!absl::ConsumePrefix(&key, "\"") || !absl::ConsumeSuffix(&key, "\"") ||
        !absl::SimpleAtod(absl::StripAsciiWhitespace(kv.second), &value)) {
      return bad(absl::StrCat("malformed member '", absl::StripAsciiWhitespace(member), "'"));
    }
    if (key == "prefill_tokens_per_s") {
      cost->prefill_tokens_per_s = value;
    } else if (key == "attention_s_per_token_ctx") {
      cost->attention_s_per_token_ctx = value;
    } else if (key == "decode_tokens_per_s") {
      cost->decode_tokens_per_s = value;
    } else {
      return bad(absl::StrCat("unknown key '", key,
                              "' (known: prefill_tokens_per_s, attention_s_per_token_ctx, "
                              "decode_tokens_per_s)"));
    }
  }
  absl::Status s = cost->Validate();
  return s.ok() ? s : bad(s.message());
}

absl::Status ApplyCalibrationFile(const std::string& path, CostModel* cost) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError("--calibration: cannot read " + path);
  std::stringstream text;
  text << in.rdbuf();
  return ApplyCalibration(text.str(), path, cost);
}

}  // namespace kvstash::bench::workload
