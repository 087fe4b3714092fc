#include "server/namespace_registry.h"

#include <cstring>

#include "absl/strings/str_cat.h"

namespace kvstash::server {

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
  std::string tenant;
  return Resolve(id_bytes, chunk_tokens, &tenant);
}

absl::StatusOr<Key128> NamespaceRegistry::Resolve(absl::string_view id_bytes,
                                                  uint32_t* chunk_tokens,
                                                  std::string* tenant) const {
  absl::StatusOr<Key128> id = ParseNamespaceId(id_bytes);
  if (!id.ok()) return id;
  absl::ReaderMutexLock lock(&mu_);
  auto it = specs_.find(*id);
  if (it == specs_.end()) {
    return absl::FailedPreconditionError(
        absl::StrCat("unknown namespace ", KeyToHex(*id), "; call RegisterNamespace first"));
  }
  *chunk_tokens = it->second.chunk_tokens();
  *tenant = it->second.tenant();
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
