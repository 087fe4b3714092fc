// What EtcdClient and its watches share: one gRPC channel and stubs per endpoint, the
// endpoint calls start at, and the conversions between etcd's messages and ours.
//
// Thread-safety: Endpoints is immutable after creation except `preferred`, which is atomic;
// the stubs are thread-safe.
#pragma once

#include <grpcpp/grpcpp.h>

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "absl/types/span.h"
#include "cluster/etcd_client.h"
#include "cluster/etcd_rpc.grpc.pb.h"

namespace kvstash::cluster::etcd_internal {

struct Endpoint {
  std::string address;  // "host:port"
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<etcdserverpb::KV::Stub> kv;
  std::unique_ptr<etcdserverpb::Lease::Stub> lease;
  std::unique_ptr<etcdserverpb::Watch::Stub> watch;
};

struct Endpoints {
  EtcdOptions options;
  std::vector<Endpoint> list;
  // Index of the endpoint that answered last: calls and watches start there.
  std::atomic<size_t> preferred{0};
};

// The range end that selects every key starting with `prefix` (etcd's prefix rule: the
// prefix with its last byte below 0xff incremented; "\0", all keys, when there is none).
std::string PrefixEnd(absl::string_view prefix);

// True when the status says the endpoint itself failed (unreachable, too slow), so the
// call may be tried on the next one.
bool IsEndpointFailure(const grpc::Status& status);

// The gRPC status as an absl::Status naming the call and the endpoint.
absl::Status FromGrpc(const grpc::Status& status, absl::string_view call,
                      absl::string_view address);

EtcdKeyValue FromProto(const etcdserverpb::KeyValue& kv);

using OnEvents = std::function<void(absl::Span<const EtcdEvent> events, int64_t revision)>;
using OnError = std::function<void(const absl::Status& why)>;

// Starts the thread of a watch over `endpoints` (etcd_watch.cc).
std::unique_ptr<EtcdWatch> StartWatch(std::shared_ptr<Endpoints> endpoints, std::string prefix,
                                      int64_t start_revision, OnEvents on_events, OnError on_error,
                                      int64_t give_up_ms);

}  // namespace kvstash::cluster::etcd_internal
