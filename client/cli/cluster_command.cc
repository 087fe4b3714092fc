#include "client/cli/cluster_command.h"

#include <algorithm>
#include <future>
#include <memory>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "client/cli/output.h"
#include "kvstash/tier_entries.h"

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
  std::vector<ChunkTier> tiers = {ChunkTier::kDram};
  for (const ClusterRow& r : rows) {
    for (const TierCapacity& t : r.tiers) AddTierColumn(t.tier, &tiers);
    if (!r.usage.has_value()) continue;
    for (const ServerTierStats& t : r.usage->tiers) AddTierColumn(t.tier, &tiers);
  }
  auto line = [&](absl::string_view id, absl::string_view address, absl::string_view zone,
                  auto tier_cell, absl::string_view chunks, absl::string_view state) {
    std::string out = absl::StrFormat("%-24s %-22s %-10s", id, address, zone);
    for (ChunkTier t : tiers) absl::StrAppendFormat(&out, " %-24s", tier_cell(t));
    absl::StrAppendFormat(&out, " %10s  %s\n", chunks, state);
    return out;
  };
  std::string out = line(
      "member", "address", "zone",
      [](ChunkTier t) { return absl::StrCat(ChunkTierName(t), " used/capacity"); }, "chunks",
      "state");
  for (const ClusterRow& r : rows) {
    const bool have = r.usage.has_value();
    auto cell = [&](ChunkTier t) {
      const uint64_t registered = TierEntry(r.tiers, t).capacity_bytes;
      if (!have) return UsedOf(std::nullopt, registered);
      const ServerTierStats used = r.usage->Of(t);
      return UsedOf(used.used_bytes, std::max(registered, used.capacity_bytes));
    };
    out += line(r.id, r.address.empty() ? "-" : r.address, r.zone.empty() ? "-" : r.zone, cell,
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
    r.tiers = m.tiers;
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
