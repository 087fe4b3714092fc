// MemberSource: where a cluster's member set comes from, followed as it changes: etcd
// (the members' own registrations, cluster/registrar.h), a static list, or the addresses a
// DNS name resolves to (a Kubernetes headless Service).
//
// Thread-safety: thread-safe. Listeners run on the source's own thread, one call at a time.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "cluster/etcd_client.h"
#include "cluster/member.h"

namespace kvstash::cluster {

struct MemberSourceStats {
  uint64_t updates = 0;  // member sets delivered to the listener
  uint64_t errors = 0;   // failed etcd calls or DNS lookups, skipped values (the last set is kept)
  bool connected = false;  // the last etcd call or DNS lookup succeeded
  uint64_t lookups = 0;    // etcd range reads or DNS lookups done, failed ones included
  std::string last_error;  // the last error counted in `errors`; empty when none
};

class MemberSource {
 public:
  // Gets the whole member set, sorted by id (SortedById), each time it changes.
  using Listener = std::function<void(const std::vector<Member>& members)>;

  virtual ~MemberSource() = default;

  // Starts following the members; `listener` gets the first set before Start returns.
  // UNAVAILABLE when no member set could be read within `timeout` (etcd down, name not
  // resolving). Call once.
  virtual absl::Status Start(Listener listener, absl::Duration timeout) = 0;
  // The last set delivered (empty before Start).
  virtual std::vector<Member> Current() const = 0;
  virtual MemberSourceStats stats() const = 0;
};

// Members registered under MembersPrefix(prefix): a range read, then a watch from its
// revision; after a watch error it reads the range again, retrying with backoff, and keeps
// delivering nothing new (the last set stays in force) while etcd is unreachable.
absl::StatusOr<std::unique_ptr<MemberSource>> NewEtcdMemberSource(const EtcdOptions& etcd,
                                                                  std::string prefix);

// A fixed set: each "host:port" becomes a member with that id, grpc_address and ucx_address
// (the port is whichever transport the client uses). INVALID_ARGUMENT for an empty list or
// a malformed entry.
absl::StatusOr<std::unique_ptr<MemberSource>> NewStaticMemberSource(
    const std::vector<std::string>& addresses);

// Which addresses a DNS member source takes. One family only: a dual-stack name lists each
// server under both, and counting it twice would double its share of the keys.
enum class DnsFamily { kIPv4, kIPv6 };

// The addresses of `family` (IPv4 unless told) that `host` resolves to, each with `port`,
// re-resolved every `refresh`: members id'd "ip:port" as in a static list. Addresses of a
// family this host has no (non-loopback) address of are not asked for (AI_ADDRCONFIG). A
// lookup that fails keeps the last set. Lookups run on a detached thread, so neither Start
// (bounded by its timeout) nor the destructor waits for one the resolver holds up; the
// destructor waits only for a listener call in progress.
absl::StatusOr<std::unique_ptr<MemberSource>> NewDnsMemberSource(
    std::string host, int port, absl::Duration refresh, DnsFamily family = DnsFamily::kIPv4);

}  // namespace kvstash::cluster
