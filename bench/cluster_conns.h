// Connections of the cluster benchmark (cluster_suite.h) to a set of daemons: one client
// shared by every client thread, as an engine process shares its cluster client. Where the
// client library cannot follow a cluster itself, RouterClients places each chunk on its
// owner by rendezvous hashing (cluster/placement.h) over one client per daemon and asks
// every daemon a lookup involves in parallel, one round trip each.
//
// Thread-safety: RouterClients is immutable after construction and shared by the Conns;
// each Conn is used by one thread at a time.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "bench/workload.h"
#include "cluster/placement.h"
#include "kvstash/client.h"

namespace kvstash::bench {

// One client per member, in the placement's member order.
class RouterClients {
 public:
  // `uris[i]` is the member with id `ids[i]`; each gets its own client with `options`.
  static absl::StatusOr<std::shared_ptr<const RouterClients>> Connect(
      const std::vector<std::string>& ids, const std::vector<std::string>& uris,
      const ClientOptions& options);

  const cluster::Placement& placement() const { return placement_; }
  Client& client(uint32_t member) const { return *clients_[member]; }
  NamespaceHandle ns(uint32_t member) const { return ns_[member]; }

 private:
  explicit RouterClients(cluster::Placement placement) : placement_(std::move(placement)) {}

  cluster::Placement placement_;
  std::vector<std::unique_ptr<Client>> clients_;
  std::vector<NamespaceHandle> ns_;
};

// A Conn over `router`: puts and gets go to each key's owner; a lookup asks every owner of
// its keys at once and returns the longest prefix all of them hold.
std::unique_ptr<Conn> NewRouterConn(std::shared_ptr<const RouterClients> router);

}  // namespace kvstash::bench
