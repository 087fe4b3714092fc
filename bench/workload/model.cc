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
  return prefill.Seconds(new_tokens, cached_tokens);
}

double CostModel::DecodeSeconds(uint64_t tokens) const {
  return static_cast<double>(tokens) / decode_tokens_per_s;
}

absl::Status CostModel::Validate() const {
  FetchAdvisorOptions advisor;
  advisor.prefill = prefill;
  advisor.kv_bytes_per_token = 1;
  if (absl::Status s = advisor.Validate(); !s.ok()) return s;
  if (!(decode_tokens_per_s > 0)) {
    return absl::InvalidArgumentError("decode_tokens_per_s must be > 0");
  }
  return absl::OkStatus();
}

CostModel DefaultCost(const ModelShape& model, const GpuSpec& gpu) {
  const GpuSpec reference_gpu;
  const ModelShape reference = *ModelByName("llama3-8b");
  const double gpu_ratio = gpu.tflops * gpu.mfu / (reference_gpu.tflops * reference_gpu.mfu);
  const double attended_ratio = static_cast<double>(model.layers) * model.d_model /
                                (static_cast<double>(reference.layers) * reference.d_model);
  CostModel c;
  c.prefill.tokens_per_s *= gpu_ratio * reference.params / model.params;
  c.prefill.attention_s_per_token2 *= attended_ratio / gpu_ratio;
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
      cost->prefill.tokens_per_s = value;
    } else if (key == "attention_s_per_token_ctx") {
      cost->prefill.attention_s_per_token2 = value;
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
