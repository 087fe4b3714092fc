#include "server/namespace_registry.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::server {

Namespace NamespaceFromProto(const v1::NamespaceSpec& spec) {
  Namespace ns;
  ns.tenant = spec.tenant();
  ns.model_id = spec.model_id();
  ns.revision = spec.revision();
  ns.dtype = spec.dtype();
  ns.kv_layout = spec.kv_layout();
  ns.num_layers = spec.num_layers();
  ns.kv_heads = spec.kv_heads();
  ns.head_dim = spec.head_dim();
  ns.tp_rank = spec.tp_rank();
  ns.tp_size = spec.tp_size();
  ns.chunk_tokens = spec.chunk_tokens();
  ns.hash_algo = spec.hash_algo() == 0 ? HashAlgo::kXxh3_128 : HashAlgo(spec.hash_algo());
  return ns;
}

v1::NamespaceSpec NamespaceToProto(const Namespace& ns) {
  v1::NamespaceSpec spec;
  spec.set_tenant(ns.tenant);
  spec.set_model_id(ns.model_id);
  spec.set_revision(ns.revision);
  spec.set_dtype(ns.dtype);
  spec.set_kv_layout(ns.kv_layout);
  spec.set_num_layers(ns.num_layers);
  spec.set_kv_heads(ns.kv_heads);
  spec.set_head_dim(ns.head_dim);
  spec.set_tp_rank(ns.tp_rank);
  spec.set_tp_size(ns.tp_size);
  spec.set_chunk_tokens(ns.chunk_tokens);
  spec.set_hash_algo(static_cast<uint32_t>(ns.hash_algo));
  return spec;
}

absl::StatusOr<Key128> ParseNamespaceId(absl::string_view bytes) {
  Key128 id;
  if (bytes.empty()) return absl::InvalidArgumentError("namespace_id is empty");
  if (bytes.size() != id.size()) {
    return absl::InvalidArgumentError(
        absl::StrCat("namespace_id must be 16 bytes, got ", bytes.size()));
  }
  std::memcpy(id.data(), bytes.data(), id.size());
  return id;
}

absl::StatusOr<Key128> NamespaceRegistry::Register(const v1::NamespaceSpec& spec) {
  const Namespace ns = NamespaceFromProto(spec);
  if (absl::Status s = ns.Validate(); !s.ok()) return s;
  const Key128 id = ns.Id();
  v1::NamespaceSpec canonical = NamespaceToProto(ns);
  absl::MutexLock lock(&mu_);
  specs_.try_emplace(id, std::move(canonical));
  return id;
}

absl::Status NamespaceRegistry::Check(const Key128& id) const {
  absl::ReaderMutexLock lock(&mu_);
  if (specs_.contains(id)) return absl::OkStatus();
  return absl::FailedPreconditionError(
      absl::StrCat("unknown namespace ", KeyToHex(id), "; call RegisterNamespace first"));
}

absl::StatusOr<Key128> NamespaceRegistry::Resolve(absl::string_view id_bytes) const {
  absl::StatusOr<Key128> id = ParseNamespaceId(id_bytes);
  if (!id.ok()) return id;
  if (absl::Status s = Check(*id); !s.ok()) return s;
  return id;
}

absl::StatusOr<Key128> NamespaceRegistry::Resolve(absl::string_view id_bytes,
                                                  uint32_t* chunk_tokens) const {
  absl::StatusOr<Key128> id = ParseNamespaceId(id_bytes);
  if (!id.ok()) return id;
  absl::ReaderMutexLock lock(&mu_);
  auto it = specs_.find(*id);
  if (it == specs_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("unknown namespace ", KeyToHex(*id), "; call RegisterNamespace first"));
  }
  *chunk_tokens = it->second.chunk_tokens();
  return id;
}

absl::StatusOr<v1::NamespaceSpec> NamespaceRegistry::Find(const Key128& id) const {
  absl::ReaderMutexLock lock(&mu_);
  auto it = specs_.find(id);
  if (it == specs_.end()) return absl::NotFoundError("namespace not registered");
  return it->second;
}

std::vector<std::pair<Key128, v1::NamespaceSpec>> NamespaceRegistry::All() const {
  absl::ReaderMutexLock lock(&mu_);
  return {specs_.begin(), specs_.end()};
}

size_t NamespaceRegistry::size() const {
  absl::ReaderMutexLock lock(&mu_);
  return specs_.size();
}

}  // namespace kvstash::server
