#include "client/cli/cluster_command.h"

#include <algorithm>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/output.h"

namespace kvstash::cli {
namespace {

// A member that does not answer must not hold the listing up for the default 5 s + retries.
constexpr int64_t kMemberConnectTimeoutMs = 2000;
constexpr int64_t kMemberDeadlineMs = 5000;

// "1.0 GiB / 4.0 GiB", or "- / 4.0 GiB" without usage.
std::string UsedOf(const std::optional<uint64_t>& used, uint64_t capacity) {
  if (capacity == 0 && !used.has_value()) return "-";
  return absl::StrCat(used.has_value() ? HumanBytes(*used) : "-", " / ", HumanBytes(capacity));
}

// The member's Stats over a connection of its own (its usage, which only it knows).
absl::StatusOr<ServerStats> MemberStats(const std::string& address, ClientOptions options) {
  options.connect_timeout_ms = std::min(options.connect_timeout_ms, kMemberConnectTimeoutMs);
  options.deadline_ms = std::min(options.deadline_ms, kMemberDeadlineMs);
  options.max_retries = 0;
  absl::StatusOr<std::unique_ptr<Client>> client =
      Client::Connect(absl::StrCat(options.cluster.transport, "://", address), options);
  if (!client.ok()) return client.status();
  return (*client)->Stats(nullptr);
}

// Fills in each row's usage, asking the members in parallel.
void AddUsage(const ClientOptions& options, std::vector<ClusterRow>* rows) {
  std::vector<std::future<absl::StatusOr<ServerStats>>> stats;
  for (const ClusterRow& r : *rows) {
    stats.push_back(std::async(std::launch::async, MemberStats, r.address, options));
  }
  for (size_t i = 0; i < rows->size(); ++i) {
    absl::StatusOr<ServerStats> s = stats[i].get();
    if (s.ok()) {
      (*rows)[i].usage = *std::move(s);
    } else {
      (*rows)[i].usage_error = s.status().ToString();
    }
  }
}

}  // namespace

std::string ClusterTable(absl::Span<const ClusterRow> rows) {
  constexpr const char* kRow = "%-24s %-22s %-10s %-24s %-24s %10s  %s\n";
  std::string out = absl::StrFormat(kRow, "member", "address", "zone", "dram used/capacity",
                                    "nvme used/capacity", "chunks", "state");
  for (const ClusterRow& r : rows) {
    const bool have = r.usage.has_value();
    absl::StrAppendFormat(
        &out, kRow, r.id, r.address.empty() ? "-" : r.address, r.zone.empty() ? "-" : r.zone,
        UsedOf(have ? std::optional<uint64_t>(r.usage->dram_used_bytes) : std::nullopt,
               have ? std::max(r.dram_capacity_bytes, r.usage->dram_capacity_bytes)
                    : r.dram_capacity_bytes),
        UsedOf(have ? std::optional<uint64_t>(r.usage->nvme_used_bytes) : std::nullopt,
               have ? std::max(r.nvme_capacity_bytes, r.usage->nvme_capacity_bytes)
                    : r.nvme_capacity_bytes),
        have ? absl::StrCat(r.usage->chunks) : "-", r.state.empty() ? "-" : r.state);
  }
  for (const ClusterRow& r : rows) {
    if (!r.usage.has_value() && !r.usage_error.empty()) {
      absl::StrAppend(&out, r.id, ": stats: ", r.usage_error, "\n");
    }
  }
  absl::StrAppend(&out, rows.size(), rows.size() == 1 ? " member" : " members", "\n");
  return out;
}

absl::Status RunCluster(Client& client, const ClientOptions& options, std::ostream& out) {
  absl::StatusOr<ClusterStatus> status = client.Cluster();
  if (!status.ok()) return status.status();
  std::vector<ClusterRow> rows;
  for (const ClusterMemberStatus& m : status->members) {
    ClusterRow r;
    r.id = m.id;
    r.address = m.address;
    r.zone = m.zone;
    r.dram_capacity_bytes = m.dram_capacity_bytes;
    r.nvme_capacity_bytes = m.nvme_capacity_bytes;
    // This client's view: idle until it called the member, then whether calls succeed.
    const char* state = m.breaker_open ? "breaker-open"
                        : m.calls == 0 ? "idle"
                        : m.connected  ? "connected"
                                       : "failing";
    r.state = absl::StrCat(state, " calls=", m.calls, " errors=", m.call_errors);
    rows.push_back(std::move(r));
  }
  AddUsage(options, &rows);
  out << ClusterTable(rows);
  out << "member source " << (status->source_connected ? "connected" : "unreachable")
      << ", member set changes=" << status->member_set_changes << "\n";
  return absl::OkStatus();
}

}  // namespace kvstash::cli
