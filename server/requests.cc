#include "server/requests.h"

#include <algorithm>
#include <cstring>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/str_cat.h"
#include "server/auth/authenticator.h"
#include "server/auth/call_limiter.h"
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
                                            "health refused",
                                            "list_namespaces refused",
                                            "clear_namespace refused",
                                            "pin refused",
                                            "end_session refused"};

// Parses `bytes` as a Req, answers it with `requests.Unary`, serializes the Resp.
template <typename Req, typename Resp>
absl::Status UnarySerialized(const Requests& requests, const CallAuth& caller,
                             absl::string_view bytes, std::string* out) {
  Req req;
  if (!req.ParseFromArray(bytes.data(), static_cast<int>(bytes.size()))) {
    return absl::InvalidArgumentError("request body is not a valid kvstash.v1 message");
  }
  Resp resp;
  if (absl::Status s = requests.Unary(caller, req, &resp); !s.ok()) return s;
  resp.SerializeToString(out);
  return absl::OkStatus();
}

// The tenant a namespace's chunks count against: its spec's, kDefaultTenant when the spec
// names none (as the store counts unbound namespaces).
std::string TenantOf(const v1::NamespaceSpec& spec) {
  return spec.tenant().empty() ? std::string(kDefaultTenant) : spec.tenant();
}

const char* AccessName(auth::Access access) {
  switch (access) {
    case auth::Access::kRead:
      return "read";
    case auth::Access::kWrite:
      return "write";
    case auth::Access::kAdmin:
      return "admin";
  }
  return "";
}

// REQUIRES: CheckPutChunk validated the hints.
PutHints ToPutHints(const PutChunkHints& h) {
  PutHints out;
  out.has_parent = !h.parent_key.empty();
  if (out.has_parent) std::memcpy(out.parent.data(), h.parent_key.data(), out.parent.size());
  out.session_id = h.session_id;
  out.ttl_ms = h.ttl_ms;
  out.priority = static_cast<Priority>(h.priority);
  out.pin = h.pin;
  return out;
}

// The deprecated per-tier fields, for clients that predate `tiers`.
void SetLegacyTierUsage(const storage::NamespaceUsage& u, v1::NamespaceUsage* out) {
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
  const storage::TierUsage dram = u.Of(storage::Tier::kDram), nvme = u.Of(storage::Tier::kNvme);
  out->set_dram_chunks(dram.chunks);
  out->set_dram_bytes(dram.bytes);
  out->set_nvme_chunks(nvme.chunks);
  out->set_nvme_bytes(nvme.bytes);
#pragma GCC diagnostic pop
}

void SetUsage(const storage::NamespaceUsage& u, v1::NamespaceUsage* out) {
  if (!u.tenant.empty()) out->set_tenant(u.tenant);
  for (const storage::TierUsage& t : u.tiers) {
    v1::TierUsage* tier = out->add_tiers();
    tier->set_tier(static_cast<v1::Tier>(t.tier));
    tier->set_chunks(t.chunks);
    tier->set_bytes(t.bytes);
  }
  out->set_pinned_bytes(u.pinned_bytes);
  SetLegacyTierUsage(u, out);
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

absl::StatusOr<auth::PrincipalPtr> Requests::Principal(absl::string_view token) const {
  if (env_->auth == nullptr) return auth::OpenPrincipal();
  absl::StatusOr<auth::PrincipalPtr> principal = env_->auth->Authenticate(token);
  if (!principal.ok()) metrics_->AddAuthFailure(AuthFailure::kUnauthenticated);
  return principal;
}

absl::StatusOr<CallAuth> Requests::Authenticate(Op op, absl::string_view token,
                                                bool begins_call) const {
  CallAuth caller;
  if (op == Op::kHealth && token.empty()) return caller;
  absl::StatusOr<auth::PrincipalPtr> principal = Principal(token);
  if (!principal.ok()) return principal.status();
  caller.principal = *std::move(principal);
  // Health is a probe (clients send it at connect): authenticated, never limited.
  if (!begins_call || op == Op::kHealth) return caller;
  if (env_->limiter != nullptr) {
    absl::StatusOr<auth::CallLimiter::Slot> slot = env_->limiter->BeginCall(*caller.principal);
    if (!slot.ok()) return slot.status();  // the limiter counts its refusals
    caller.slot = std::make_shared<auth::CallLimiter::Slot>(*std::move(slot));
  }
  env_->auth_metrics.AddCall(caller.principal->name);
  return caller;
}

absl::Status Requests::Deny(const CallAuth& caller, auth::Access access,
                            absl::string_view tenant) const {
  metrics_->AddAuthFailure(AuthFailure::kPermissionDenied);
  const std::string who =
      caller.principal == nullptr ? "an unauthenticated caller" : caller.principal->name;
  return absl::PermissionDeniedError(absl::StrCat(
      "principal \"", who, "\" has no ", AccessName(access), " right on tenant \"", tenant, "\""));
}

absl::Status Requests::Authorize(const CallAuth& caller, auth::Access access,
                                 absl::string_view tenant) const {
  if (tenant.empty()) tenant = kDefaultTenant;
  // No principal: a transport that did not authenticate the call; refuse, never assume.
  if (caller.principal == nullptr || !caller.principal->May(access, tenant)) {
    return Deny(caller, access, tenant);
  }
  return absl::OkStatus();
}

void ActiveGet::Fetch(const Key128& key, storage::ChunkStore::GetCallback done) const {
  requests_->env().store->GetAsync({ns_, key}, lease_id_, std::move(done));
}

absl::StatusOr<storage::ChunkRef> ActiveGet::Serve(
    absl::StatusOr<storage::ChunkRef> fetched) const {
  if (!fetched.ok()) return fetched;
  if (absl::Status s = requests_->ChargeBytes(caller_, (*fetched)->meta().size_bytes); !s.ok()) {
    return s;
  }
  return fetched;
}

void ActiveGet::End(absl::StatusCode code) {
  if (ended_.exchange(true)) return;
  requests_->RecordCall(Op::kGet, code, start_);
}

absl::StatusOr<std::shared_ptr<ActiveGet>> Requests::BeginGet(
    const CallAuth& caller, absl::string_view namespace_id, size_t key_count, uint64_t lease_id,
    TransportMetrics::Clock::time_point start) const {
  absl::StatusOr<Key128> ns = ResolveNamespace(caller, namespace_id, auth::Access::kRead);
  if (!ns.ok()) return ns.status();
  if (absl::Status s = CheckKeyCount(key_count); !s.ok()) return s;
  return std::make_shared<ActiveGet>(this, caller, *ns, lease_id, start);
}

absl::Status Requests::ChargeBytes(const CallAuth& caller, uint64_t bytes) const {
  if (env_->limiter == nullptr || caller.principal == nullptr) return absl::OkStatus();
  return env_->limiter->ChargeBytes(*caller.principal, bytes);
}

bool Requests::MayMapArena(const CallAuth& caller) {
  return caller.principal != nullptr && caller.principal->trusted;
}

absl::StatusOr<Key128> Requests::ResolveNamespace(const CallAuth& caller, absl::string_view id,
                                                  auth::Access access) const {
  uint32_t chunk_tokens = 0;
  std::string tenant;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(id, &chunk_tokens, &tenant);
  if (!ns.ok()) return ns;
  if (absl::Status s = Authorize(caller, access, tenant); !s.ok()) return s;
  return ns;
}

absl::Status Requests::CheckKeyCount(size_t n) const {
  return server::CheckKeyCount(n, env_->limits);
}

absl::StatusOr<std::vector<Key128>> Requests::ParseKeys(absl::string_view bytes) const {
  return server::ParseKeys(bytes, env_->limits);
}

absl::Status Requests::CheckPutChunk(const PutChunkHeader& h) const {
  return server::CheckPutChunk(h, env_->limits);
}

PutChunk Requests::BeginPut(const CallAuth& caller, const Key128& ns,
                            const PutChunkHeader& h) const {
  PutChunk chunk;
  chunk.metrics_ = metrics_;
  chunk.store_ = env_->store;
  if (absl::Status s = ChargeBytes(caller, h.meta.size_bytes); !s.ok()) {
    chunk.status_ = std::move(s);  // refused: drain the payload, fail this chunk only
    return chunk;
  }
  storage::ChunkId id{ns, {}};
  std::memcpy(id.key.data(), h.key.data(), id.key.size());
  absl::StatusOr<std::unique_ptr<storage::PendingChunk>> pending =
      env_->store->BeginPut(id, h.meta, ToPutHints(h.hints));
  if (pending.ok()) {
    chunk.pending_ = std::move(*pending);
  } else if (absl::IsAlreadyExists(pending.status())) {
    chunk.already_present_ = true;  // idempotent repeat: drain and acknowledge
  } else {
    chunk.status_ = pending.status();
  }
  return chunk;
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::RegisterNamespaceRequest& req,
                             v1::RegisterNamespaceResponse* resp) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  if (absl::Status s = Authorize(caller, auth::Access::kWrite, TenantOf(req.spec())); !s.ok()) {
    return s;
  }
  absl::StatusOr<Key128> id = env_->registry->Register(req.spec());
  if (!id.ok()) return id.status();
  env_->store->SetNamespaceTenant(*id, TenantOf(req.spec()));
  resp->set_namespace_id(KeyToBytes(*id));
  return absl::OkStatus();
}

absl::StatusOr<Requests::NamespaceKeys> Requests::AdmitKeys(const CallAuth& caller,
                                                            auth::Access access,
                                                            const std::string& namespace_id,
                                                            absl::string_view keys) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  NamespaceKeys call;
  std::string tenant;
  absl::StatusOr<Key128> ns = env_->registry->Resolve(namespace_id, &call.chunk_tokens, &tenant);
  if (!ns.ok()) return ns.status();
  if (absl::Status s = Authorize(caller, access, tenant); !s.ok()) return s;
  call.ns = *ns;
  absl::StatusOr<std::vector<Key128>> parsed = ParseKeys(keys);
  if (!parsed.ok()) return parsed.status();
  call.keys = std::move(*parsed);
  return call;
}

absl::StatusOr<Key128> Requests::AdmitNamespace(const CallAuth& caller, auth::Access access,
                                                const std::string& namespace_id) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  return ResolveNamespace(caller, namespace_id, access);
}

absl::Status Requests::AuthorizeStored(const CallAuth& caller, auth::Access access,
                                       absl::string_view tenant) const {
  if (!tenant.empty()) return Authorize(caller, access, tenant);
  // Bindings are not kept across restarts: an unbound namespace may be any tenant's.
  if (caller.principal != nullptr && caller.principal->MayAll(access)) return absl::OkStatus();
  return Deny(caller, access, auth::kAnyTenant);
}

absl::StatusOr<Key128> Requests::AdmitStoredNamespace(const CallAuth& caller, auth::Access access,
                                                      const std::string& namespace_id) const {
  absl::StatusOr<Key128> ns = AdmitNamespace(caller, access, namespace_id);
  if (!absl::IsFailedPrecondition(ns.status())) return ns;  // registered, or refused
  absl::StatusOr<Key128> id = ParseNamespaceId(namespace_id);
  if (!id.ok()) return id;
  for (const storage::NamespaceUsage& u : env_->store->NamespaceUsages()) {
    if (u.ns != *id || u.Chunks() == 0) continue;
    if (absl::Status s = AuthorizeStored(caller, access, u.tenant); !s.ok()) return s;
    return id;
  }
  return ns;
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::LookupRequest& req,
                             v1::LookupResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call =
      AdmitKeys(caller, auth::Access::kRead, req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  storage::LookupResult r = env_->store->Lookup(
      call->ns, call->keys, absl::Milliseconds(req.lease_ms()), req.session_id());
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

absl::Status Requests::Unary(const CallAuth& caller, const v1::KeysRequest& req,
                             v1::ExistsResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call =
      AdmitKeys(caller, auth::Access::kRead, req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  std::string* present = resp->mutable_present();
  present->reserve(call->keys.size());
  for (const Key128& key : call->keys) {
    present->push_back(static_cast<char>(env_->store->Locate({call->ns, key})));
  }
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::KeysRequest& req,
                             v1::DeleteResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call =
      AdmitKeys(caller, auth::Access::kWrite, req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  uint32_t deleted = 0;
  for (const Key128& key : call->keys) {
    if (env_->store->Delete({call->ns, key}).ok()) ++deleted;
  }
  resp->set_deleted(deleted);
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::StatsRequest& req,
                             v1::StatsResponse* resp) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  // Its totals and tier counters cover every tenant's chunks.
  if (caller.principal == nullptr || !caller.principal->MayAll(auth::Access::kRead)) {
    return Deny(caller, auth::Access::kRead, auth::kAnyTenant);
  }
  return FillStatsResponse(*env_, req, resp);
}

absl::Status Requests::Unary(const CallAuth&, const v1::HealthRequest&,
                             v1::HealthResponse* resp) const {
  resp->set_state(env_->draining.load() ? v1::HealthResponse::DRAINING
                                        : v1::HealthResponse::SERVING);
  resp->set_version(version_);
  resp->set_uptime_ms(absl::ToInt64Milliseconds(absl::Now() - env_->start_time));
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::ListNamespacesRequest&,
                             v1::ListNamespacesResponse* resp) const {
  if (absl::Status s = Admit(); !s.ok()) return s;
  if (caller.principal == nullptr) return Deny(caller, auth::Access::kRead, auth::kAnyTenant);
  const auth::Principal& who = *caller.principal;
  const bool all = who.MayAll(auth::Access::kRead);
  // Registered namespaces are listed even before their first chunk; namespaces the store
  // holds chunks of (from NVMe, before their writers registered again) without a spec.
  absl::flat_hash_map<Key128, v1::NamespaceUsage> by_id;
  for (auto& [id, spec] : env_->registry->All()) {
    v1::NamespaceUsage& u = by_id[id];
    u.set_tenant(TenantOf(spec));
    *u.mutable_spec() = std::move(spec);
  }
  for (const storage::NamespaceUsage& usage : env_->store->NamespaceUsages()) {
    SetUsage(usage, &by_id[usage.ns]);
  }
  std::vector<Key128> ids;
  ids.reserve(by_id.size());
  for (const auto& [id, u] : by_id) {
    // Only what the caller may read; a namespace whose tenant is unknown (chunks left by an
    // earlier run, not registered since) only to callers who may read every tenant.
    if (all || (!u.tenant().empty() && who.May(auth::Access::kRead, u.tenant()))) {
      ids.push_back(id);
    }
  }
  std::sort(ids.begin(), ids.end());
  for (const Key128& id : ids) {
    v1::NamespaceUsage* u = resp->add_namespaces();
    *u = std::move(by_id[id]);
    u->set_namespace_id(KeyToBytes(id));
  }
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::ClearNamespaceRequest& req,
                             v1::ClearNamespaceResponse* resp) const {
  absl::StatusOr<Key128> ns =
      AdmitStoredNamespace(caller, auth::Access::kAdmin, req.namespace_id());
  if (!ns.ok()) return ns.status();
  resp->set_deleted(env_->store->ClearNamespace(*ns));
  env_->log->Info("namespace cleared", {{"namespace", KeyToHex(*ns)}, {"chunks", resp->deleted()}});
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::PinRequest& req,
                             v1::PinResponse* resp) const {
  absl::StatusOr<NamespaceKeys> call =
      AdmitKeys(caller, auth::Access::kAdmin, req.namespace_id(), req.keys());
  if (!call.ok()) return call.status();
  absl::StatusOr<uint32_t> changed = env_->store->Pin(call->ns, call->keys, !req.unpin());
  if (!changed.ok()) return changed.status();
  resp->set_changed(*changed);
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, const v1::EndSessionRequest& req,
                             v1::EndSessionResponse*) const {
  absl::StatusOr<Key128> ns = AdmitNamespace(caller, auth::Access::kAdmin, req.namespace_id());
  if (!ns.ok()) return ns.status();
  if (req.session_id() == 0) {
    return absl::InvalidArgumentError("session_id: 0 names no session");
  }
  env_->store->EndSession(*ns, req.session_id());
  return absl::OkStatus();
}

absl::Status Requests::Unary(const CallAuth& caller, Op op, absl::string_view request,
                             std::string* response) const {
  switch (op) {
    case Op::kRegisterNamespace:
      return UnarySerialized<v1::RegisterNamespaceRequest, v1::RegisterNamespaceResponse>(
          *this, caller, request, response);
    case Op::kLookup:
      return UnarySerialized<v1::LookupRequest, v1::LookupResponse>(*this, caller, request,
                                                                    response);
    case Op::kExists:
      return UnarySerialized<v1::KeysRequest, v1::ExistsResponse>(*this, caller, request, response);
    case Op::kDelete:
      return UnarySerialized<v1::KeysRequest, v1::DeleteResponse>(*this, caller, request, response);
    case Op::kStats:
      return UnarySerialized<v1::StatsRequest, v1::StatsResponse>(*this, caller, request, response);
    case Op::kHealth:
      return UnarySerialized<v1::HealthRequest, v1::HealthResponse>(*this, caller, request,
                                                                    response);
    case Op::kListNamespaces:
      return UnarySerialized<v1::ListNamespacesRequest, v1::ListNamespacesResponse>(
          *this, caller, request, response);
    case Op::kClearNamespace:
      return UnarySerialized<v1::ClearNamespaceRequest, v1::ClearNamespaceResponse>(
          *this, caller, request, response);
    case Op::kPin:
      return UnarySerialized<v1::PinRequest, v1::PinResponse>(*this, caller, request, response);
    case Op::kEndSession:
      return UnarySerialized<v1::EndSessionRequest, v1::EndSessionResponse>(*this, caller, request,
                                                                            response);
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
