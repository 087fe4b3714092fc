#include "server/requests.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "server/stats_reply.h"

namespace kvstash::server {
namespace {

constexpr const char* kRefused[kOpCount] = {"register_namespace refused",
                                            "lookup refused",
                                            "put refused",
                                            "get refused",
                                            "exists refused",
                                            "delete refused",
                                            "stats refused",
                                            "health refused"};

// Parses `bytes` as a Req, answers it with `requests.Unary`, serializes the Resp.
template <typename Req, typename Resp>
absl::Status UnarySerialized(const Requests& requests, absl::string_view bytes, std::string* out) {
  Req req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("request body is not a valid kvstash.v1 message");
  }
  Resp resp;
  if (absl::Status s = requests.Unary(req, &resp); !s.ok()) return s;
  resp.SerializeToString(out);
  return absl::OkStatus();
}

}  // namespace

void PutChunk::Fail(absl::Status status) {
  pending_.reset();
  status_ = std::move(status);
}

absl::Status PutChunk::Finish() {
  if (pending_ != nullptr) status_ = store_->CommitPut(std::move(pending_));
  metrics_->AddPutResult(already_present_ ? PutResult::kAlreadyPresent
                         : status_.ok()   ? PutResult::kStored
                                          : PutResult::kFailed);
  return status_;
}

absl::StatusOr<Key128> Requests::ResolveNamespace(absl::string_view id) const {
  return env_->registry->Resolve(id);
}

absl::Status Requests::CheckKeyCount(size_t n) const {
  const uint32_t max_keys = env_->limits.max_keys_per_request;
  if (n > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat(n, " keys exceed server.max_keys_per_request (",
                                                   max_keys, "); split the request"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<Key128>> Requests::ParseKeys(absl::string_view bytes) const {
  constexpr size_t kKeyBytes = sizeof(Key128);
  if (bytes.size() % kKeyBytes != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("keys must be a multiple of 16 bytes, got ", bytes.size()));
  }
  const size_t n = bytes.size() / kKeyBytes;
  if (absl::Status s = CheckKeyCount(n); !s.ok()) return s;
  std::vector<Key128> keys(n);
  if (n > 0) std::memcpy(keys.data(), bytes.data(), bytes.size());
  return keys;
}

absl::Status Requests::CheckPutChunk(const PutChunkHeader& h) const {
  const uint32_t max_keys = env_->limits.max_keys_per_request;
  if (h.key.size() != sizeof(Key128)) {
    return absl::InvalidArgumentError(
        absl::StrCat("chunk ", h.index, ": key must be 16 bytes, got ", h.key.size()));
  }
  if (h.meta.size_bytes == 0) {
    return absl::InvalidArgumentError(absl::StrCat("chunk ", h.index, ": size_bytes is 0"));
  }
  if (h.index >= max_keys || h.count > max_keys) {
    return absl::InvalidArgumentError(absl::StrCat("more than server.max_keys_per_request (",
                                                   max_keys, ") chunks in one Put call"));
  }
  return absl::OkStatus();
}

PutChunk Requests::BeginPut(const Key128& ns, const PutChunkHeader& h) const {
  PutChunk chunk;
  chunk.metrics_ = metrics_;
  chunk.store_ = env_->store;
  storage::ChunkId id{ns, {}};
  std::memcpy(id.key.data(), h.key.data(), id.key.size());
  absl::StatusOr<std::unique_ptr<storage::PendingChunk>> pending =
      env_->store->BeginPut(id, h.meta);
  if (pending.ok()) {
    chunk.pending_ = std::move(*pending);
  } else if (absl::IsAlreadyExists(pending.status())) {
    chunk.already_present_ = true;  // idempotent repeat: drain and acknowledge
  } else {
    chunk.status_ = pending.status();
  }
  return chunk;
}

absl::Status Requests::Unary(const v1::RegisterNamespaceRequest& req,
                             v1::RegisterNamespaceResponse* resp) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  absl::StatusOr<Key128> id = env_->registry->Register(req.spec());
  if (!id.ok()) return id.status();
  resp->set_namespace_id(KeyToBytes(*id));
  return absl::OkStatus();
}

absl::StatusOr<Requests::NamespaceKeys> Requests::AdmitKeys(const std::string& namespace_id,
                                                            absl::string_view keys) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  NamespaceKeys call;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(namespace_id, &call.chunk_tokens);
  if (!ns.ok()) return ns.status();
  call.ns = *ns;
  absl::StatusOr<std::vector<Key128>> parsed = ParseKeys(keys);
  if (!parsed.ok()) return parsed.status();
  call.keys = std::move(*parsed);
  return call;
}

absl::Status Requests::Unary(const v1::LookupRequest& req, v1::LookupResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call = AdmitKeys(req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  storage::LookupResult r =
      env_->store->Lookup(call->ns, call->keys, absl::Milliseconds(req.lease_ms()));
  resp->set_hit_count(r.hit_count);
  metrics_->AddLookup(call->keys.size(), r.hit_count, uint64_t{r.hit_count} * call->chunk_tokens);
  std::string* tiers = resp->mutable_tiers();
  for (storage::Tier t : r.tiers) tiers->push_back(static_cast<char>(t));
  if (r.lease_id != 0) {
    resp->set_lease_id(r.lease_id);
    resp->set_lease_expires_unix_ms(absl::ToUnixMillis(r.lease_expires));
  }
  return absl::OkStatus();
}

absl::Status Requests::Unary(const v1::KeysRequest& req, v1::ExistsResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call = AdmitKeys(req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  std::string* present = resp->mutable_present();
  present->reserve(call->keys.size());
  for (const Key128& key : call->keys) {
    present->push_back(static_cast<char>(env_->store->Locate({call->ns, key})));
  }
  return absl::OkStatus();
}

absl::Status Requests::Unary(const v1::KeysRequest& req, v1::DeleteResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call = AdmitKeys(req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  uint32_t deleted = 0;
  for (const Key128& key : call->keys) {
    if (env_->store->Delete({call->ns, key}).ok()) ++deleted;
  }
  resp->set_deleted(deleted);
  return absl::OkStatus();
}

absl::Status Requests::Unary(const v1::StatsRequest& req, v1::StatsResponse* resp) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  return FillStatsResponse(*env_, req, resp);
}

absl::Status Requests::Unary(const v1::HealthRequest&, v1::HealthResponse* resp) const {
  resp->set_state(env_->draining.load() ? v1::HealthResponse::DRAINING
                                        : v1::HealthResponse::SERVING);
  resp->set_version(version_);
  resp->set_uptime_ms(absl::ToInt64Milliseconds(absl::Now() - env_->start_time));
  return absl::OkStatus();
}

absl::Status Requests::Unary(Op op, absl::string_view request, std::string* response) const {
  switch (op) {
    case Op::kRegisterNamespace:
      return UnarySerialized<v1::RegisterNamespaceRequest, v1::RegisterNamespaceResponse>(
          *this, request, response);
    case Op::kLookup:
      return UnarySerialized<v1::LookupRequest, v1::LookupResponse>(*this, request, response);
    case Op::kExists:
      return UnarySerialized<v1::KeysRequest, v1::ExistsResponse>(*this, request, response);
    case Op::kDelete:
      return UnarySerialized<v1::KeysRequest, v1::DeleteResponse>(*this, request, response);
    case Op::kStats:
      return UnarySerialized<v1::StatsRequest, v1::StatsResponse>(*this, request, response);
    case Op::kHealth:
      return UnarySerialized<v1::HealthRequest, v1::HealthResponse>(*this, request, response);
    default:
      return absl::InvalidArgumentError("not a unary method");
  }
}

void Requests::LogRefused(Op op, const absl::Status& status, absl::string_view peer) const {
  if (peer.empty()) {
    env_->log->Debug(kRefused[static_cast<int>(op)], {{"status", status}});
  } else {
    env_->log->Debug(kRefused[static_cast<int>(op)], {{"status", status}, {"peer", peer}});
  }
}

}  // namespace kvstash::server
