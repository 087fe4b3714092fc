#include "bench/report.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"

namespace kvstash::bench {
namespace {

// Targets of the issue, checked at 4 MiB and 4 clients.
constexpr size_t kTargetChunkBytes = 4u << 20;
constexpr int kTargetClients = 4;
constexpr double kGetVsRedisMin = 1.2;
constexpr double kPutVsRedisMin = 0.8;
constexpr double kLookupP50MaxUs = 1000;
constexpr int kLookupTargetKeys = 1000;
constexpr double kRssBudgetFactor = 1.05;
constexpr uint64_t kRssSlackBytes = 150ull << 20;

int SystemOrder(const std::string& s) {
  if (s == "kvstash") return 0;
  if (s == "redis") return 1;
  if (s == "memcached") return 2;
  return 3;
}

// op, size, clients, sys#, "sys<TAB>transport" (one system may run over several transports)
using CellKey = std::tuple<int, size_t, int, int, std::string>;

CellKey KeyOf(Op op, size_t size, int clients, const std::string& system,
              const std::string& transport) {
  return {static_cast<int>(op), size, clients, SystemOrder(system), system + "\t" + transport};
}

const Row* FindRow(const std::vector<Row>& rows, const std::string& system, Op op, size_t size,
                   int clients) {
  for (const Row& r : rows) {
    if (r.system == system && r.op == op && r.chunk_bytes == size && r.clients == clients) {
      return &r;
    }
  }
  return nullptr;
}

// Throughput that a ratio compares: bytes for put/get, requests for lookup.
double Rate(const Row& r) { return r.op == Op::kLookup ? r.ops_per_s : r.gbps; }

std::string Verdict(bool met) { return met ? "MET" : "NOT MET"; }

void PrintRatioTarget(std::ostream& out, const std::vector<Row>& rows, Op op, double min_ratio,
                      const char* label) {
  const Row* k = FindRow(rows, "kvstash", op, kTargetChunkBytes, kTargetClients);
  const Row* r = FindRow(rows, "redis", op, kTargetChunkBytes, kTargetClients);
  out << absl::StrFormat("  %-44s ", label);
  if (k == nullptr || k->rounds == 0 || r == nullptr || r->rounds == 0 || r->gbps <= 0) {
    out << "NOT MEASURED (needs kvstash and redis at 4MiB, 4 clients)\n";
    return;
  }
  double ratio = k->gbps / r->gbps;
  out << absl::StrFormat("%-8s kvstash %.2f GB/s vs redis %.2f GB/s = %.2fx (need >= %.1fx)\n",
                         Verdict(ratio >= min_ratio), k->gbps, r->gbps, ratio, min_ratio);
}

}  // namespace

std::string JsonEscape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      out += absl::StrFormat("\\u%04x", c);
    } else {
      out += c;
    }
  }
  return out;
}

double Median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 == 1 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

std::string FormatBytes(uint64_t bytes) {
  static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  double v = static_cast<double>(bytes);
  while (v >= 1024 && unit < 4) {
    v /= 1024;
    ++unit;
  }
  if (v == static_cast<double>(static_cast<uint64_t>(v))) {
    return absl::StrCat(static_cast<uint64_t>(v), kUnits[unit]);
  }
  return absl::StrFormat("%.2f%s", v, kUnits[unit]);
}

std::vector<Row> MedianRows(const std::vector<Sample>& samples) {
  std::map<CellKey, std::vector<const Sample*>> cells;
  for (const Sample& s : samples) {
    cells[KeyOf(s.op, s.chunk_bytes, s.clients, s.system, s.transport)].push_back(&s);
  }
  std::vector<Row> rows;
  for (const auto& [key, list] : cells) {
    const Sample& first = *list.front();
    Row row{first.system,      first.transport, first.op,
            first.chunk_bytes, first.clients,   first.keys_per_op};
    std::vector<double> gbps, ops, p50, p99;
    row.rounds = 0;
    for (const Sample* s : list) {
      if (s->result.errors > 0 && row.errors == 0) row.first_error = s->result.first_error;
      row.errors += s->result.errors;
      if (s->result.ops == 0) continue;  // a failed round (e.g. server gone) is not a value
      ++row.rounds;
      gbps.push_back(s->result.gbps);
      ops.push_back(s->result.ops_per_s);
      p50.push_back(s->result.p50_us);
      p99.push_back(s->result.p99_us);
    }
    row.gbps = Median(gbps);
    row.ops_per_s = Median(ops);
    row.p50_us = Median(p50);
    row.p99_us = Median(p99);
    rows.push_back(std::move(row));
  }
  return rows;
}

void PrintResultTable(std::ostream& out, const std::vector<Row>& rows) {
  out << absl::StrFormat("%-10s %-5s %-7s %-8s %7s %8s %10s %10s %10s %6s %6s\n", "system", "xport",
                         "op", "size", "clients", "GB/s", "ops/s", "p50 us", "p99 us", "errors",
                         "rounds");
  for (const Row& r : rows) {
    std::string size =
        r.op == Op::kLookup ? absl::StrCat(r.keys_per_op, "keys") : FormatBytes(r.chunk_bytes);
    out << absl::StrFormat("%-10s %-5s %-7s %-8s %7d %8.3f %10.1f %10.1f %10.1f %6d %6d\n",
                           r.system, r.transport, OpName(r.op), size, r.clients, r.gbps,
                           r.ops_per_s, r.p50_us, r.p99_us, r.errors, r.rounds);
  }
  for (const Row& r : rows) {
    if (r.errors > 0) {
      out << "  errors in " << r.system << " " << OpName(r.op) << " " << FormatBytes(r.chunk_bytes)
          << " x" << r.clients << ": " << r.first_error << "\n";
    }
  }
}

void PrintRatioTable(std::ostream& out, const std::vector<Row>& rows) {
  out << absl::StrFormat("%-7s %-8s %7s %12s %12s %12s %12s\n", "op", "size", "clients", "kvstash",
                         "/redis", "/memcached", "p50/redis");
  for (const Row& k : rows) {
    if (k.system != "kvstash" || k.rounds == 0) continue;
    const Row* r = FindRow(rows, "redis", k.op, k.chunk_bytes, k.clients);
    const Row* m = FindRow(rows, "memcached", k.op, k.chunk_bytes, k.clients);
    auto ratio = [&](const Row* peer) {
      return peer != nullptr && peer->rounds > 0 && Rate(*peer) > 0
                 ? absl::StrFormat("%.2fx", Rate(k) / Rate(*peer))
                 : std::string("-");
    };
    std::string p50 = r != nullptr && r->rounds > 0 && r->p50_us > 0
                          ? absl::StrFormat("%.2fx", k.p50_us / r->p50_us)
                          : std::string("-");
    std::string size =
        k.op == Op::kLookup ? absl::StrCat(k.keys_per_op, "keys") : FormatBytes(k.chunk_bytes);
    std::string rate = k.op == Op::kLookup ? absl::StrFormat("%.0f/s", k.ops_per_s)
                                           : absl::StrFormat("%.3fGB/s", k.gbps);
    out << absl::StrFormat("%-7s %-8s %7d %12s %12s %12s %12s\n", OpName(k.op), size, k.clients,
                           rate, ratio(r), ratio(m), p50);
  }
}

void PrintRss(std::ostream& out, const RssResult& rss) {
  if (!rss.measured) {
    out << "  not measured: " << rss.skipped_reason << "\n";
    return;
  }
  out << absl::StrFormat(
      "  budget %s, filled with %s (%s chunks, %d clients, %.2f GB/s, %d errors)\n"
      "  daemon reports dram_used %s; VmRSS %s; peak VmHWM %s (%.3fx budget)\n",
      FormatBytes(rss.budget_bytes), FormatBytes(rss.fill_bytes), FormatBytes(rss.fill_chunk_bytes),
      rss.fill_clients, rss.fill_gbps, rss.errors, FormatBytes(rss.dram_used_bytes),
      FormatBytes(rss.rss_bytes), FormatBytes(rss.peak_rss_bytes),
      static_cast<double>(rss.peak_rss_bytes) / static_cast<double>(rss.budget_bytes));
  if (!rss.note.empty()) out << "  note: " << rss.note << "\n";
}

void PrintTargets(std::ostream& out, const std::vector<Row>& rows, const RssResult& rss) {
  PrintRatioTarget(out, rows, Op::kGet, kGetVsRedisMin, "get 4MiB x4 clients >= 1.2x Redis GET");
  PrintRatioTarget(out, rows, Op::kPut, kPutVsRedisMin, "put 4MiB x4 clients >= 0.8x Redis SET");

  const Row* lookup = nullptr;  // the fewest-clients kvstash lookup row: unloaded latency
  for (const Row& r : rows) {
    if (r.system == "kvstash" && r.op == Op::kLookup && r.rounds > 0 &&
        (lookup == nullptr || r.clients < lookup->clients)) {
      lookup = &r;
    }
  }
  out << absl::StrFormat("  %-44s ", "lookup 1,000-chunk prompt p50 < 1 ms");
  if (lookup == nullptr) {
    out << "NOT MEASURED\n";
  } else if (lookup->keys_per_op != kLookupTargetKeys) {
    out << "NOT MEASURED (prompts had " << lookup->keys_per_op << " keys; see --lookup_keys)\n";
  } else {
    out << absl::StrFormat("%-8s p50 %.1f us, p99 %.1f us (%d keys, %d client%s)\n",
                           Verdict(lookup->p50_us < kLookupP50MaxUs && lookup->errors == 0),
                           lookup->p50_us, lookup->p99_us, lookup->keys_per_op, lookup->clients,
                           lookup->clients == 1 ? "" : "s");
  }

  out << absl::StrFormat("  %-44s ", "RSS, full DRAM tier <= 1.05x budget + 150MiB");
  if (!rss.measured) {
    out << "NOT MEASURED (" << rss.skipped_reason << ")\n";
    return;
  }
  const double limit = kRssBudgetFactor * static_cast<double>(rss.budget_bytes) +
                       static_cast<double>(kRssSlackBytes);
  out << absl::StrFormat("%-8s peak %s vs limit %s (budget %s)\n",
                         Verdict(static_cast<double>(rss.peak_rss_bytes) <= limit),
                         FormatBytes(rss.peak_rss_bytes), FormatBytes(static_cast<uint64_t>(limit)),
                         FormatBytes(rss.budget_bytes));
}

absl::Status WriteJsonLines(const std::string& path, const std::vector<Row>& rows,
                            const RssResult& rss) {
  std::ofstream out(path, std::ios::trunc);
  if (!out) return absl::UnavailableError("cannot write " + path);
  for (const Row& r : rows) {
    out << absl::StrFormat(
        "{\"system\":\"%s\",\"transport\":\"%s\",\"op\":\"%s\",\"chunk_bytes\":%d,"
        "\"clients\":%d,\"gbps\":%.4f,\"ops_per_s\":%.2f,\"p50_us\":%.2f,\"p99_us\":%.2f,"
        "\"rounds\":%d,\"errors\":%d",
        r.system, r.transport, OpName(r.op), r.chunk_bytes, r.clients, r.gbps, r.ops_per_s,
        r.p50_us, r.p99_us, r.rounds, r.errors);
    if (r.system == "kvstash") out << ",\"tier\":\"dram\"";  // the sweep runs DRAM only
    if (r.op == Op::kLookup) out << ",\"keys_per_op\":" << r.keys_per_op;
    if (r.errors > 0) out << ",\"first_error\":\"" << JsonEscape(r.first_error) << "\"";
    out << r.json_extra << "}\n";
  }
  if (rss.measured) {
    out << absl::StrFormat(
        "{\"system\":\"kvstash\",\"transport\":\"grpc\",\"op\":\"rss\",\"chunk_bytes\":%d,"
        "\"clients\":%d,\"gbps\":%.4f,\"ops_per_s\":0,\"p50_us\":0,\"p99_us\":0,"
        "\"peak_rss_bytes\":%d,\"rss_bytes\":%d,\"budget_bytes\":%d,\"dram_used_bytes\":%d,"
        "\"fill_bytes\":%d,\"errors\":%d}\n",
        rss.fill_chunk_bytes, rss.fill_clients, rss.fill_gbps, rss.peak_rss_bytes, rss.rss_bytes,
        rss.budget_bytes, rss.dram_used_bytes, rss.fill_bytes, rss.errors);
  }
  out.flush();
  return out ? absl::OkStatus() : absl::DataLossError("write failed: " + path);
}

}  // namespace kvstash::bench
