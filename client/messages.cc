#include "client/messages.h"

#include "absl/strings/str_cat.h"
#include "client/wire_convert.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/namespace_spec.h"
#include "proto/status_map.h"

namespace kvstash::client_internal {
namespace {

UnaryRequest Serialized(UnaryMethod method, const Key128* ns,
                        const google::protobuf::MessageLite& msg) {
  UnaryRequest req{method, ns, {}};
  msg.SerializeToString(&req.body);
  return req;
}

UnaryRequest KeysRequest(UnaryMethod method, const Key128& ns, absl::Span<const Key128> keys) {
  v1::KeysRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  req.set_keys(KeysToBytes(keys));
  return Serialized(method, &ns, req);
}

template <typename Reply>
absl::StatusOr<Reply> Parse(absl::string_view body) {
  Reply reply;
  if (!reply.ParseFromArray(body.data(), static_cast<int>(body.size()))) {
    return absl::InternalError(absl::StrCat("kvstashd sent an unparsable ", reply.GetTypeName()));
  }
  return reply;
}

}  // namespace

UnaryRequest RegisterNamespaceRequest(const Namespace& spec) {
  v1::RegisterNamespaceRequest req;
  *req.mutable_spec() = wire::NamespaceToProto(spec);
  return Serialized(UnaryMethod::kRegisterNamespace, nullptr, req);
}

UnaryRequest LookupRequest(const Key128& ns, absl::Span<const Key128> keys, uint32_t lease_ms,
                           uint64_t session_id) {
  v1::LookupRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  req.set_keys(KeysToBytes(keys));
  req.set_lease_ms(lease_ms);
  req.set_session_id(session_id);
  return Serialized(UnaryMethod::kLookup, &ns, req);
}

UnaryRequest ExistsRequest(const Key128& ns, absl::Span<const Key128> keys) {
  return KeysRequest(UnaryMethod::kExists, ns, keys);
}

UnaryRequest DeleteRequest(const Key128& ns, absl::Span<const Key128> keys) {
  return KeysRequest(UnaryMethod::kDelete, ns, keys);
}

UnaryRequest StatsRequest(const Key128* ns) {
  v1::StatsRequest req;
  if (ns != nullptr) req.set_namespace_id(KeyToBytes(*ns));
  return Serialized(UnaryMethod::kStats, ns, req);
}

UnaryRequest HealthRequest() {
  return Serialized(UnaryMethod::kHealth, nullptr, v1::HealthRequest());
}

UnaryRequest ListNamespacesRequest() {
  return Serialized(UnaryMethod::kListNamespaces, nullptr, v1::ListNamespacesRequest());
}

UnaryRequest ClearNamespaceRequest(const Key128& ns) {
  v1::ClearNamespaceRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  return Serialized(UnaryMethod::kClearNamespace, &ns, req);
}

UnaryRequest PinRequest(const Key128& ns, absl::Span<const Key128> keys, bool pin) {
  v1::PinRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  req.set_keys(KeysToBytes(keys));
  req.set_unpin(!pin);
  return Serialized(UnaryMethod::kPin, &ns, req);
}

UnaryRequest EndSessionRequest(const Key128& ns, uint64_t session_id) {
  v1::EndSessionRequest req;
  req.set_namespace_id(KeyToBytes(ns));
  req.set_session_id(session_id);
  return Serialized(UnaryMethod::kEndSession, &ns, req);
}

absl::StatusOr<Key128> ParseRegisterNamespaceReply(absl::string_view body) {
  absl::StatusOr<v1::RegisterNamespaceResponse> resp = Parse<v1::RegisterNamespaceResponse>(body);
  if (!resp.ok()) return resp.status();
  return KeyFromBytes(resp->namespace_id(), "namespace id");
}

absl::StatusOr<LookupResult> ParseLookupReply(absl::string_view body, size_t key_count) {
  absl::StatusOr<v1::LookupResponse> resp = Parse<v1::LookupResponse>(body);
  if (!resp.ok()) return resp.status();
  if (resp->hit_count() > key_count || resp->tiers().size() != resp->hit_count()) {
    return absl::InternalError(absl::StrCat("LookupResponse: ", resp->hit_count(), " hits, ",
                                            resp->tiers().size(), " tiers for ", key_count,
                                            " keys"));
  }
  LookupResult out;
  out.hit_count = resp->hit_count();
  out.tiers = TiersFromBytes(resp->tiers());
  out.lease_id = resp->lease_id();
  return out;
}

absl::StatusOr<std::vector<ChunkTier>> ParseExistsReply(absl::string_view body, size_t key_count) {
  absl::StatusOr<v1::ExistsResponse> resp = Parse<v1::ExistsResponse>(body);
  if (!resp.ok()) return resp.status();
  if (resp->present().size() != key_count) {
    return absl::InternalError(absl::StrCat("ExistsResponse: ", resp->present().size(),
                                            " answers for ", key_count, " keys"));
  }
  return TiersFromBytes(resp->present());
}

absl::StatusOr<uint32_t> ParseDeleteReply(absl::string_view body) {
  absl::StatusOr<v1::DeleteResponse> resp = Parse<v1::DeleteResponse>(body);
  if (!resp.ok()) return resp.status();
  return resp->deleted();
}

absl::StatusOr<ServerStats> ParseStatsReply(absl::string_view body, const Key128* ns) {
  absl::StatusOr<v1::StatsResponse> resp = Parse<v1::StatsResponse>(body);
  if (!resp.ok()) return resp.status();
  return StatsFromProto(*resp, ns);
}

absl::StatusOr<HealthInfo> ParseHealthReply(absl::string_view body) {
  absl::StatusOr<v1::HealthResponse> resp = Parse<v1::HealthResponse>(body);
  if (!resp.ok()) return resp.status();
  return HealthFromProto(*resp);
}

absl::StatusOr<std::vector<NamespaceUsage>> ParseListNamespacesReply(absl::string_view body) {
  absl::StatusOr<v1::ListNamespacesResponse> resp = Parse<v1::ListNamespacesResponse>(body);
  if (!resp.ok()) return resp.status();
  std::vector<NamespaceUsage> out;
  out.reserve(resp->namespaces_size());
  for (const v1::NamespaceUsage& u : resp->namespaces()) {
    absl::StatusOr<NamespaceUsage> usage = UsageFromProto(u);
    if (!usage.ok()) return usage.status();
    out.push_back(*std::move(usage));
  }
  return out;
}

absl::StatusOr<uint64_t> ParseClearNamespaceReply(absl::string_view body) {
  absl::StatusOr<v1::ClearNamespaceResponse> resp = Parse<v1::ClearNamespaceResponse>(body);
  if (!resp.ok()) return resp.status();
  return resp->deleted();
}

absl::StatusOr<uint32_t> ParsePinReply(absl::string_view body, size_t key_count) {
  absl::StatusOr<v1::PinResponse> resp = Parse<v1::PinResponse>(body);
  if (!resp.ok()) return resp.status();
  if (resp->changed() > key_count) {
    return absl::InternalError(
        absl::StrCat("PinResponse: ", resp->changed(), " changed of ", key_count, " keys"));
  }
  return resp->changed();
}

absl::Status ParseEndSessionReply(absl::string_view body) {
  return Parse<v1::EndSessionResponse>(body).status();
}

void ResetPutResults(absl::Span<PutItem> items) {
  for (PutItem& item : items) {
    item.status = absl::UnavailableError("no answer from kvstashd for this chunk");
    item.already_present = false;
  }
}

void ResetGetResults(absl::Span<GetItem> items) {
  for (GetItem& item : items) {
    item.status = absl::UnavailableError("no answer from kvstashd for this chunk");
    item.size = 0;
    item.tokens = 0;
    item.format = 0;
    item.checksum = 0;
  }
}

bool AcceptGetChunk(const ChunkMeta& meta, GetItem* item) {
  item->size = meta.size_bytes;
  item->tokens = meta.tokens;
  item->format = meta.format;
  item->checksum = meta.checksum;
  if (meta.size_bytes <= item->capacity) return true;
  item->status = TooLargeError(*item, meta.size_bytes);
  return false;
}

absl::Status GetChunkError(const Key128& key, int code, absl::string_view detail) {
  if (!detail.empty())
    return wire::FromCode(code, absl::StrCat("chunk ", KeyToHex(key), ": ", detail));
  const bool not_found = code == static_cast<int>(absl::StatusCode::kNotFound);
  return wire::FromCode(
      code, absl::StrCat("chunk ", KeyToHex(key), not_found ? " not found" : " could not be read"));
}

absl::Status TooLargeError(const GetItem& item, uint64_t size_bytes) {
  return absl::ResourceExhaustedError(absl::StrCat("chunk ", KeyToHex(item.key), " has ",
                                                   size_bytes, " bytes; the buffer holds ",
                                                   item.capacity));
}

}  // namespace kvstash::client_internal
