// `kvstash cluster [URI]`: the members of a cluster as the client library sees them
// (Client::Cluster()), each with its capacity and its use, asked from the member itself
// (Stats over a direct connection), and the client's connection and breaker state for it.
//
// Thread-safety: RunCluster is called once, from main; ClusterTable is a pure function.
#pragma once

#include <cstdint>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kvstash/client.h"

namespace kvstash::cli {

// One member's line.
struct ClusterRow {
  std::string id;
  std::string address;              // gRPC HOST:PORT
  std::string zone;                 // "" = none
  std::vector<TierCapacity> tiers;  // as the member registered them
  // The client's view of the member: idle, connected, failing or breaker-open, and its
  // calls, e.g. "connected calls=3 errors=0".
  std::string state;
  // The member's own Stats; empty when it could not be asked (usage_error says why).
  std::optional<ServerStats> usage;
  std::string usage_error;
};

// A header line, one line per member (id, address, zone, used/capacity of each tier any
// member runs, chunks, state), the reasons of failed Stats calls, and a count.
std::string ClusterTable(absl::Span<const ClusterRow> rows);

// Lists the members of the cluster `client` was connected to, asking each for its Stats in
// parallel over a connection of its own (ClusterOptions::transport, `options` otherwise).
// FAILED_PRECONDITION for a client of one daemon; a member that does not answer is listed
// with its error.
absl::Status RunCluster(Client& client, const ClientOptions& options, std::ostream& out);

}  // namespace kvstash::cli
