// Registrar: a daemon's membership in its cluster. It grants an etcd lease of lease_ttl_s,
// puts its Member under MemberKey(prefix, id) with that lease, and refreshes the lease every
// third of its TTL, each attempt ending within a third of the lease time left so a hung
// endpoint leaves room for another try; when the lease is lost (etcd lost it, or the daemon
// could not refresh it in time) it grants a new one and registers again. After each
// refresh it reads the key back and puts it again when it is missing (deleted from outside)
// or held by an older registration; a key put by a newer incarnation of the same id (a later
// started_unix_ms) is left to it. While etcd is unreachable the daemon serves on and keeps
// retrying. Stop() revokes the lease, which deletes the key at once while the key is still
// under it, so clients drop the member at once instead of after the TTL; a key a newer
// incarnation put meanwhile is left alone.
//
// Thread-safety: thread-safe; one background thread does the etcd calls.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "cluster/etcd_client.h"
#include "cluster/member.h"

namespace kvstash::cluster {

struct RegistrarOptions {
  EtcdOptions etcd;
  // Cluster prefix, e.g. "/kvstash/default" (ValidateClusterPrefix).
  std::string prefix;
  Member self;
  // Seconds a member stays registered after its daemon stops refreshing (killed, hung,
  // cut off from etcd). 2 to 3600.
  int64_t lease_ttl_s = 10;
};

struct RegistrarStats {
  bool registered = false;     // the key is in etcd under a live lease, as last seen
  uint64_t registrations = 0;  // leases granted and key put (1 unless the lease was lost)
  uint64_t etcd_errors = 0;    // failed etcd calls
  uint64_t refreshes = 0;      // lease refreshes etcd confirmed
  uint64_t key_restores = 0;   // key found missing or under an older registration, put again
};

class Registrar {
 public:
  // Validates the options and starts the background thread; the first registration is
  // attempted before Create returns, but its failure (etcd down) is not an error: it is
  // retried. INVALID_ARGUMENT for bad options (ValidateMember on `self` included).
  static absl::StatusOr<std::unique_ptr<Registrar>> Create(const RegistrarOptions& options);
  virtual ~Registrar() = default;  // calls Stop() when not yet stopped

  // Withdraws the member (lease revoked, which deletes the key still under it; best effort)
  // and stops the thread. Returns within endpoints x call_timeout_ms: an etcd call already
  // in flight on the thread runs out first, the revoke gets what is left. Idempotent.
  virtual void Stop() = 0;
  virtual RegistrarStats stats() const = 0;
};

}  // namespace kvstash::cluster
