#include "server/metrics/exposition.h"

#include <charconv>
#include <cmath>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"

namespace kvstash::metrics {
namespace {

absl::string_view TypeName(MetricType type) {
  switch (type) {
    case MetricType::kCounter:
      return "counter";
    case MetricType::kGauge:
      return "gauge";
    case MetricType::kHistogram:
      return "histogram";
  }
  return "untyped";
}

// `{a="x",b="y"}`, with `extra` (le) last; nothing when there are no labels at all.
void AppendLabels(const Labels& labels, const std::pair<std::string, std::string>* extra,
                  std::string* out) {
  if (labels.empty() && extra == nullptr) return;
  out->push_back('{');
  bool first = true;
  auto add = [&](const std::pair<std::string, std::string>& l) {
    if (!first) out->push_back(',');
    first = false;
    absl::StrAppend(out, l.first, "=\"", EscapeLabelValue(l.second), "\"");
  };
  for (const auto& l : labels) add(l);
  if (extra != nullptr) add(*extra);
  out->push_back('}');
}

void AppendLine(absl::string_view name, const Labels& labels,
                const std::pair<std::string, std::string>* extra, absl::string_view value,
                std::string* out) {
  out->append(name.data(), name.size());
  AppendLabels(labels, extra, out);
  absl::StrAppend(out, " ", value, "\n");
}

void AppendHistogram(const std::string& name, const Sample& s, std::string* out) {
  const HistogramData& h = s.histogram;
  uint64_t cumulative = 0;
  const std::string bucket = name + "_bucket";
  for (size_t i = 0; i < h.bucket_counts.size(); ++i) {
    cumulative += h.bucket_counts[i];
    const double bound = i < h.upper_bounds.size() ? h.upper_bounds[i] : INFINITY;
    const std::pair<std::string, std::string> le{"le", FormatValue(bound)};
    AppendLine(bucket, s.labels, &le, absl::StrCat(cumulative), out);
  }
  AppendLine(name + "_sum", s.labels, nullptr, FormatValue(h.sum), out);
  AppendLine(name + "_count", s.labels, nullptr, absl::StrCat(cumulative), out);
}

std::string Escape(absl::string_view in, bool quotes) {
  std::string out;
  out.reserve(in.size());
  for (char c : in) {
    if (c == '\\') {
      out += "\\\\";
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '"' && quotes) {
      out += "\\\"";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

}  // namespace

std::string EscapeLabelValue(absl::string_view value) { return Escape(value, true); }

std::string EscapeHelp(absl::string_view help) { return Escape(help, false); }

std::string FormatValue(double value) {
  if (std::isnan(value)) return "NaN";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  if (value == std::trunc(value) && std::fabs(value) < 1e15) {
    return absl::StrCat(static_cast<int64_t>(value));
  }
  char buf[64];
  const std::to_chars_result r =
      std::to_chars(buf, buf + sizeof(buf), value, std::chars_format::general);
  return std::string(buf, r.ptr);
}

void AppendFamily(const Family& family, std::string* out) {
  absl::StrAppend(out, "# HELP ", family.name, " ", EscapeHelp(family.help), "\n");
  absl::StrAppend(out, "# TYPE ", family.name, " ", TypeName(family.type), "\n");
  for (const Sample& s : family.samples) {
    if (family.type == MetricType::kHistogram) {
      AppendHistogram(family.name, s, out);
    } else {
      AppendLine(family.name, s.labels, nullptr, FormatValue(s.value), out);
    }
  }
}

std::string RenderText(absl::Span<const Family> families) {
  // Families of one name (e.g. one per transport) become one: the format allows a single
  // HELP/TYPE block per metric name.
  std::vector<Family> merged;
  absl::flat_hash_map<absl::string_view, size_t> by_name;
  for (const Family& f : families) {
    auto [it, fresh] = by_name.try_emplace(f.name, merged.size());
    if (fresh) {
      merged.push_back(f);
    } else {
      std::vector<Sample>& to = merged[it->second].samples;
      to.insert(to.end(), f.samples.begin(), f.samples.end());
    }
  }
  std::string out;
  for (const Family& f : merged) AppendFamily(f, &out);
  return out;
}

}  // namespace kvstash::metrics
