#include "server/grpc_service.h"

#include "proto/status_map.h"
#include "server/get_reactor.h"
#include "server/put_reactor.h"
#include "server/stats_reply.h"

namespace kvstash::server {
namespace {

// One unary call, measured: request and response bytes, latency and outcome. Lives on
// the handler's stack (unary calls are answered inline) and counts in
// ServiceEnv::unary_in_handler meanwhile.
class UnaryCall {
 public:
  UnaryCall(const ServiceEnv* env, Op op, const google::protobuf::MessageLite& request)
      : env_(env), metrics_(&env->metrics), op_(op), start_(TransportMetrics::Clock::now()) {
    env_->unary_in_handler.fetch_add(1);
    metrics_->AddReceivedBytes(request.ByteSizeLong());
  }
  ~UnaryCall() { env_->unary_in_handler.fetch_sub(1); }
  UnaryCall(const UnaryCall&) = delete;
  UnaryCall& operator=(const UnaryCall&) = delete;

  // Answers the call with the outcome of `status`.
  grpc::ServerUnaryReactor* Reply(grpc::CallbackServerContext* context, const absl::Status& status,
                                  const google::protobuf::MessageLite& response) {
    if (status.ok()) metrics_->AddSentBytes(response.ByteSizeLong());
    metrics_->RecordCall(op_, static_cast<int>(status.code()), start_);
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(wire::ToGrpcStatus(status));
    return reactor;
  }

 private:
  const ServiceEnv* const env_;
  TransportMetrics* const metrics_;
  const Op op_;
  const TransportMetrics::Clock::time_point start_;
};

std::string IdBytes(const Key128& id) {
  return std::string(reinterpret_cast<const char*>(id.data()), id.size());
}

}  // namespace

grpc::ServerUnaryReactor* KvStashService::RegisterNamespace(
    grpc::CallbackServerContext* context, const v1::RegisterNamespaceRequest* request,
    v1::RegisterNamespaceResponse* response) {
  UnaryCall call(env_, Op::kRegisterNamespace, *request);
  return call.Reply(context, DoRegister(*request, response), *response);
}

grpc::ServerUnaryReactor* KvStashService::Lookup(grpc::CallbackServerContext* context,
                                                 const v1::LookupRequest* request,
                                                 v1::LookupResponse* response) {
  UnaryCall call(env_, Op::kLookup, *request);
  return call.Reply(context, DoLookup(*request, &env_->metrics, response), *response);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* KvStashService::Put(grpc::CallbackServerContext* context,
                                                               grpc::ByteBuffer* response) {
  return NewPutReactor(env_, context, response);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* KvStashService::Get(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  return NewGetReactor(env_, context, request);
}

grpc::ServerUnaryReactor* KvStashService::Exists(grpc::CallbackServerContext* context,
                                                 const v1::KeysRequest* request,
                                                 v1::ExistsResponse* response) {
  UnaryCall call(env_, Op::kExists, *request);
  return call.Reply(context, DoExists(*request, response), *response);
}

grpc::ServerUnaryReactor* KvStashService::Delete(grpc::CallbackServerContext* context,
                                                 const v1::KeysRequest* request,
                                                 v1::DeleteResponse* response) {
  UnaryCall call(env_, Op::kDelete, *request);
  return call.Reply(context, DoDelete(*request, response), *response);
}

grpc::ServerUnaryReactor* KvStashService::Stats(grpc::CallbackServerContext* context,
                                                const v1::StatsRequest* request,
                                                v1::StatsResponse* response) {
  UnaryCall call(env_, Op::kStats, *request);
  return call.Reply(context, DoStats(*request, response), *response);
}

// Health answers even while draining: that is how a client learns the daemon is going away.
grpc::ServerUnaryReactor* KvStashService::Health(grpc::CallbackServerContext* context,
                                                 const v1::HealthRequest* request,
                                                 v1::HealthResponse* response) {
  UnaryCall call(env_, Op::kHealth, *request);
  DoHealth(response);
  return call.Reply(context, absl::OkStatus(), *response);
}

void KvStashService::DoHealth(v1::HealthResponse* resp) const {
  resp->set_state(env_->draining.load() ? v1::HealthResponse::DRAINING
                                        : v1::HealthResponse::SERVING);
  resp->set_version(version_);
  resp->set_uptime_ms(absl::ToInt64Milliseconds(absl::Now() - env_->start_time));
}

namespace {

// Parses `bytes` into a default-constructed Req, runs `fn(req, &resp)`, serializes resp.
template <typename Req, typename Resp, typename Fn>
absl::Status RunSerialized(absl::string_view bytes, std::string* out, Fn fn) {
  Req req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("request body is not a valid kvstash.v1 message");
  }
  Resp resp;
  if (absl::Status s = fn(req, &resp); !s.ok()) return s;
  resp.SerializeToString(out);
  return absl::OkStatus();
}

}  // namespace

absl::Status KvStashService::CallUnary(Op op, absl::string_view request, TransportMetrics* metrics,
                                       std::string* response) {
  switch (op) {
    case Op::kRegisterNamespace:
      return RunSerialized<v1::RegisterNamespaceRequest, v1::RegisterNamespaceResponse>(
          request, response, [&](const auto& req, auto* resp) { return DoRegister(req, resp); });
    case Op::kLookup:
      return RunSerialized<v1::LookupRequest, v1::LookupResponse>(
          request, response,
          [&](const auto& req, auto* resp) { return DoLookup(req, metrics, resp); });
    case Op::kExists:
      return RunSerialized<v1::KeysRequest, v1::ExistsResponse>(
          request, response, [&](const auto& req, auto* resp) { return DoExists(req, resp); });
    case Op::kDelete:
      return RunSerialized<v1::KeysRequest, v1::DeleteResponse>(
          request, response, [&](const auto& req, auto* resp) { return DoDelete(req, resp); });
    case Op::kStats:
      return RunSerialized<v1::StatsRequest, v1::StatsResponse>(
          request, response, [&](const auto& req, auto* resp) { return DoStats(req, resp); });
    case Op::kHealth:
      return RunSerialized<v1::HealthRequest, v1::HealthResponse>(request, response,
                                                                  [&](const auto&, auto* resp) {
                                                                    DoHealth(resp);
                                                                    return absl::OkStatus();
                                                                  });
    default:
      return absl::InvalidArgumentError("not a unary method");
  }
}

absl::Status KvStashService::DoRegister(const v1::RegisterNamespaceRequest& req,
                                        v1::RegisterNamespaceResponse* resp) {
  if (absl::Status s = env_->Admit(); !s.ok()) return s;
  absl::StatusOr<Key128> id = env_->registry->Register(req.spec());
  if (!id.ok()) return id.status();
  resp->set_namespace_id(IdBytes(*id));
  return absl::OkStatus();
}

absl::Status KvStashService::DoLookup(const v1::LookupRequest& req, TransportMetrics* metrics,
                                      v1::LookupResponse* resp) {
  if (absl::Status s = env_->Admit(); !s.ok()) return s;
  uint32_t chunk_tokens = 0;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(req.namespace_id(), &chunk_tokens);
  if (!ns.ok()) return ns.status();
  absl::StatusOr<std::vector<Key128>> keys =
      ParseKeys(req.keys(), env_->limits.max_keys_per_request);
  if (!keys.ok()) return keys.status();
  storage::LookupResult r = env_->store->Lookup(*ns, *keys, absl::Milliseconds(req.lease_ms()));
  resp->set_hit_count(r.hit_count);
  metrics->AddLookup(keys->size(), r.hit_count, uint64_t{r.hit_count} * chunk_tokens);
  std::string* tiers = resp->mutable_tiers();
  for (storage::Tier t : r.tiers) tiers->push_back(static_cast<char>(t));
  if (r.lease_id != 0) {
    resp->set_lease_id(r.lease_id);
    resp->set_lease_expires_unix_ms(absl::ToUnixMillis(r.lease_expires));
  }
  return absl::OkStatus();
}

absl::Status KvStashService::DoExists(const v1::KeysRequest& req, v1::ExistsResponse* resp) {
  if (absl::Status s = env_->Admit(); !s.ok()) return s;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(req.namespace_id());
  if (!ns.ok()) return ns.status();
  absl::StatusOr<std::vector<Key128>> keys =
      ParseKeys(req.keys(), env_->limits.max_keys_per_request);
  if (!keys.ok()) return keys.status();
  std::string* present = resp->mutable_present();
  present->reserve(keys->size());
  for (const Key128& key : *keys) {
    present->push_back(static_cast<char>(env_->store->Locate({*ns, key})));
  }
  return absl::OkStatus();
}

absl::Status KvStashService::DoDelete(const v1::KeysRequest& req, v1::DeleteResponse* resp) {
  if (absl::Status s = env_->Admit(); !s.ok()) return s;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(req.namespace_id());
  if (!ns.ok()) return ns.status();
  absl::StatusOr<std::vector<Key128>> keys =
      ParseKeys(req.keys(), env_->limits.max_keys_per_request);
  if (!keys.ok()) return keys.status();
  uint32_t deleted = 0;
  for (const Key128& key : *keys) {
    if (env_->store->Delete({*ns, key}).ok()) ++deleted;
  }
  resp->set_deleted(deleted);
  return absl::OkStatus();
}

absl::Status KvStashService::DoStats(const v1::StatsRequest& req, v1::StatsResponse* resp) {
  if (absl::Status s = env_->Admit(); !s.ok()) return s;
  return FillStatsResponse(*env_, req, resp);
}

}  // namespace kvstash::server
