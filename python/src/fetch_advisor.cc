// The native FetchAdvisor: options as keyword arguments whose defaults are the C++
// FetchAdvisorOptions defaults, tiers as the integers of kvstash.Tier.
#include "fetch_advisor.h"

#include <cstdint>
#include <memory>
#include <vector>

#include "absl/strings/str_cat.h"
#include "errors.h"
#include "kvstash/fetch_advisor.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/unique_ptr.h"
#include "nanobind/stl/vector.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

ChunkTier TierOf(int tier) {
  if (tier < 0 || tier > static_cast<int>(ChunkTier::kNvme)) {
    ThrowInvalid(absl::StrCat("tier: expected a kvstash.Tier (0..3), got ", tier));
  }
  return static_cast<ChunkTier>(tier);
}

std::unique_ptr<FetchAdvisor> Make(uint64_t kv_bytes_per_token, double tokens_per_s,
                                   double attention_s_per_token2, double gpu_bytes_per_s,
                                   double dram_bytes_per_s, double nvme_bytes_per_s,
                                   double fixed_fetch_s, double ewma_weight, double fetch_margin) {
  FetchAdvisorOptions o;
  o.kv_bytes_per_token = kv_bytes_per_token;
  o.prefill.tokens_per_s = tokens_per_s;
  o.prefill.attention_s_per_token2 = attention_s_per_token2;
  o.gpu_bytes_per_s = gpu_bytes_per_s;
  o.dram_bytes_per_s = dram_bytes_per_s;
  o.nvme_bytes_per_s = nvme_bytes_per_s;
  o.fixed_fetch_s = fixed_fetch_s;
  o.ewma_weight = ewma_weight;
  o.fetch_margin = fetch_margin;
  absl::StatusOr<std::unique_ptr<FetchAdvisor>> advisor = FetchAdvisor::Create(o);
  ThrowIfError(advisor.status());
  return *std::move(advisor);
}

// The defaults of every option, by keyword: kvstash.fetch_advisor_defaults().
nb::dict Defaults() {
  const FetchAdvisorOptions o;
  nb::dict d;
  d["tokens_per_s"] = o.prefill.tokens_per_s;
  d["attention_s_per_token2"] = o.prefill.attention_s_per_token2;
  d["gpu_bytes_per_s"] = o.gpu_bytes_per_s;
  d["dram_bytes_per_s"] = o.dram_bytes_per_s;
  d["nvme_bytes_per_s"] = o.nvme_bytes_per_s;
  d["fixed_fetch_s"] = o.fixed_fetch_s;
  d["ewma_weight"] = o.ewma_weight;
  d["fetch_margin"] = o.fetch_margin;
  return d;
}

uint32_t ChunksToFetch(const FetchAdvisor& a, const std::vector<int>& tiers, uint32_t chunk_tokens,
                       uint64_t prompt_tokens) {
  std::vector<ChunkTier> t;
  t.reserve(tiers.size());
  for (int tier : tiers) t.push_back(TierOf(tier));
  return a.ChunksToFetch(t, chunk_tokens, prompt_tokens);
}

}  // namespace

void BindFetchAdvisor(nb::module_& m) {
  const FetchAdvisorOptions d;
  m.def("fetch_advisor_defaults", &Defaults);
  nb::class_<FetchAdvisor>(m, "FetchAdvisor")
      .def(nb::new_(&Make), nb::arg("kv_bytes_per_token"), nb::kw_only(),
           nb::arg("tokens_per_s") = d.prefill.tokens_per_s,
           nb::arg("attention_s_per_token2") = d.prefill.attention_s_per_token2,
           nb::arg("gpu_bytes_per_s") = d.gpu_bytes_per_s,
           nb::arg("dram_bytes_per_s") = d.dram_bytes_per_s,
           nb::arg("nvme_bytes_per_s") = d.nvme_bytes_per_s,
           nb::arg("fixed_fetch_s") = d.fixed_fetch_s, nb::arg("ewma_weight") = d.ewma_weight,
           nb::arg("fetch_margin") = d.fetch_margin)
      .def_prop_ro("kv_bytes_per_token",
                   [](const FetchAdvisor& a) { return a.options().kv_bytes_per_token; })
      .def(
          "record_fetch",
          [](FetchAdvisor& a, int tier, uint64_t bytes, double seconds) {
            a.RecordFetch(TierOf(tier), bytes, seconds);
          },
          nb::arg("tier"), nb::arg("bytes"), nb::arg("seconds"))
      .def(
          "bandwidth_bytes_per_s",
          [](const FetchAdvisor& a, int tier) { return a.BandwidthBytesPerSecond(TierOf(tier)); },
          nb::arg("tier"))
      .def(
          "observations",
          [](const FetchAdvisor& a, int tier) { return a.Observations(TierOf(tier)); },
          nb::arg("tier"))
      .def(
          "fetch_seconds",
          [](const FetchAdvisor& a, uint64_t tokens, int tier) {
            return a.FetchSeconds(tokens, TierOf(tier));
          },
          nb::arg("tokens"), nb::arg("tier"))
      .def("recompute_seconds", &FetchAdvisor::RecomputeSeconds, nb::arg("tokens"),
           nb::arg("context_tokens") = 0)
      .def(
          "should_fetch",
          [](const FetchAdvisor& a, uint64_t tokens, int tier, uint64_t context_tokens) {
            return a.ShouldFetch(tokens, TierOf(tier), context_tokens);
          },
          nb::arg("tokens"), nb::arg("tier"), nb::arg("context_tokens") = 0)
      .def("chunks_to_fetch", &ChunksToFetch, nb::arg("tiers"), nb::arg("chunk_tokens"),
           nb::arg("prompt_tokens"));
}

}  // namespace kvstash::python
