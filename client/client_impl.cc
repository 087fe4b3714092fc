#include "client/client_impl.h"

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/item_checks.h"
#include "common/xxh3_dispatch.h"

namespace kvstash::client_internal {

bool IsUnknownNamespace(const absl::Status& s) {
  return s.code() == absl::StatusCode::kFailedPrecondition &&
         absl::StrContains(s.message(), "unknown namespace");
}

ClientImpl::ClientImpl(TransportPtr transport, const ClientOptions& options)
    : options_(options), transport_(std::move(transport)), executor_(options.async_threads) {}

absl::Status ClientImpl::Run(const Key128* ns, Attempt attempt) {
  CallContext ctx;
  ctx.deadline = absl::Now() + absl::Milliseconds(options_.deadline_ms);
  Backoff backoff(BackoffPolicy{options_.initial_backoff_ms, options_.max_backoff_ms});
  bool reregistered = false;
  for (;;) {
    absl::Status s = attempt(ctx);
    if (s.ok()) return s;
    if (ns != nullptr && !reregistered && IsUnknownNamespace(s)) {
      absl::Status r = Reregister(*ns, ctx, s);
      if (r.ok()) {
        reregistered = true;  // once: a second "unknown namespace" is the daemon's answer
        continue;
      }
      s = r;
    }
    if (!BackOffBeforeRetry(s, ctx, &backoff)) return s;
  }
}

absl::Status ClientImpl::Reregister(const Key128& ns, const CallContext& ctx,
                                    const absl::Status& why) {
  Namespace spec;
  {
    absl::MutexLock lock(&mu_);
    auto it = namespaces_.find(ns);
    if (it == namespaces_.end()) return why;  // not opened here: nothing to replay
    spec = it->second;
  }
  absl::StatusOr<Key128> id = transport_->RegisterNamespace(ctx, spec);
  if (!id.ok()) return id.status();
  if (*id != ns) {
    return absl::InternalError(absl::StrCat("daemon derived namespace id ", KeyToHex(*id),
                                            " for namespace ", KeyToHex(ns)));
  }
  return absl::OkStatus();
}

bool ClientImpl::BackOffBeforeRetry(const absl::Status& s, const CallContext& ctx,
                                    Backoff* backoff) {
  if (s.code() != absl::StatusCode::kUnavailable) return false;
  if (backoff->retries() >= options_.max_retries) return false;
  absl::Duration delay = absl::Milliseconds(backoff->NextDelayMs());
  // Sleeping past the deadline would only turn an informative UNAVAILABLE into
  // DEADLINE_EXCEEDED.
  if (absl::Now() + delay >= ctx.deadline) return false;
  absl::SleepFor(delay);
  return true;
}

absl::StatusOr<NamespaceHandle> ClientImpl::OpenNamespace(const Namespace& spec) {
  if (absl::Status s = spec.Validate(); !s.ok()) return s;
  NamespaceHandle handle{spec.Id()};
  Key128 server_id{};
  absl::Status s = Run(nullptr, [&](const CallContext& ctx) {
    absl::StatusOr<Key128> id = transport_->RegisterNamespace(ctx, spec);
    if (id.ok()) server_id = *id;
    return id.status();
  });
  if (!s.ok()) return s;
  if (server_id != handle.id) {
    // Keys derived here would never match the daemon's view of this namespace.
    return absl::InternalError(absl::StrCat("daemon derived namespace id ", KeyToHex(server_id),
                                            ", client derived ", KeyToHex(handle.id)));
  }
  absl::MutexLock lock(&mu_);
  namespaces_.insert_or_assign(handle.id, spec);
  return handle;
}

absl::StatusOr<LookupResult> ClientImpl::Lookup(NamespaceHandle ns, absl::Span<const Key128> keys,
                                                uint32_t lease_ms, uint64_t session_id) {
  if (keys.empty()) return LookupResult{};  // a prompt shorter than one chunk hits nothing
  return RunFor<LookupResult>(&ns.id, [&](const CallContext& ctx) {
    return transport_->Lookup(ctx, ns.id, keys, lease_ms, session_id);
  });
}

absl::Status ClientImpl::Put(NamespaceHandle ns, absl::Span<PutItem> items) {
  if (absl::Status s = CheckPutItems(items); !s.ok()) return s;
  if (items.empty()) return absl::OkStatus();
  // 0 asks the daemon to compute the checksum during its copy. Hashing here costs a full
  // pass over the payload on the caller's cores (measured: ~20% of a put's CPU), so it is
  // done only when the caller wants the daemon to verify its copy end to end.
  std::vector<uint64_t> checksums(items.size(), 0);
  if (options_.checksum_puts) {
    for (size_t i = 0; i < items.size(); ++i) {
      checksums[i] = XXH3_64bits(items[i].data, items[i].size);
    }
  }
  return Run(&ns.id,
             [&](const CallContext& ctx) { return transport_->Put(ctx, ns.id, items, checksums); });
}

absl::Status ClientImpl::Get(NamespaceHandle ns, absl::Span<GetItem> items, uint64_t lease_id) {
  if (absl::Status s = CheckGetItems(items); !s.ok()) return s;
  if (items.empty()) return absl::OkStatus();
  absl::Status s = Run(
      &ns.id, [&](const CallContext& ctx) { return transport_->Get(ctx, ns.id, items, lease_id); });
  if (s.ok() && options_.verify_checksums) VerifyChecksums(items);
  return s;
}

void ClientImpl::VerifyChecksums(absl::Span<GetItem> items) const {
  for (GetItem& item : items) {
    // A zero checksum means the daemon did not report one; there is nothing to compare.
    if (!item.status.ok() || item.checksum == 0) continue;
    uint64_t actual = XXH3_64bits(item.data, item.size);
    if (actual != item.checksum) {
      item.status = absl::DataLossError(
          absl::StrCat("chunk ", KeyToHex(item.key), ": checksum ", absl::Hex(actual),
                       " of received bytes, daemon recorded ", absl::Hex(item.checksum)));
    }
  }
}

std::future<absl::Status> ClientImpl::PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) {
  return executor_.Submit([this, ns, items] { return Put(ns, items); });
}

std::future<absl::Status> ClientImpl::GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                               uint64_t lease_id) {
  return executor_.Submit([this, ns, items, lease_id] { return Get(ns, items, lease_id); });
}

void ClientImpl::RunAsync(std::function<void()> task) { executor_.Post(std::move(task)); }

absl::StatusOr<std::vector<ChunkTier>> ClientImpl::Exists(NamespaceHandle ns,
                                                          absl::Span<const Key128> keys) {
  std::vector<ChunkTier> tiers;
  if (keys.empty()) return tiers;
  absl::Status s = Run(&ns.id, [&](const CallContext& ctx) {
    absl::StatusOr<std::vector<ChunkTier>> r = transport_->Exists(ctx, ns.id, keys);
    if (r.ok()) tiers = *std::move(r);
    return r.status();
  });
  if (!s.ok()) return s;
  return tiers;
}

absl::StatusOr<uint32_t> ClientImpl::Delete(NamespaceHandle ns, absl::Span<const Key128> keys) {
  uint32_t deleted = 0;
  if (keys.empty()) return deleted;
  absl::Status s = Run(&ns.id, [&](const CallContext& ctx) {
    absl::StatusOr<uint32_t> r = transport_->Delete(ctx, ns.id, keys);
    if (r.ok()) deleted = *r;
    return r.status();
  });
  if (!s.ok()) return s;
  return deleted;
}

absl::StatusOr<ServerStats> ClientImpl::Stats(const NamespaceHandle* ns) {
  ServerStats stats;
  const Key128* id = ns != nullptr ? &ns->id : nullptr;
  absl::Status s = Run(id, [&](const CallContext& ctx) {
    absl::StatusOr<ServerStats> r = transport_->Stats(ctx, id);
    if (r.ok()) stats = *r;
    return r.status();
  });
  if (!s.ok()) return s;
  return stats;
}

absl::StatusOr<HealthInfo> ClientImpl::Health() {
  HealthInfo info;
  absl::Status s = Run(nullptr, [&](const CallContext& ctx) {
    absl::StatusOr<HealthInfo> r = transport_->Health(ctx);
    if (r.ok()) info = *std::move(r);
    return r.status();
  });
  if (!s.ok()) return s;
  return info;
}

absl::StatusOr<std::vector<NamespaceUsage>> ClientImpl::ListNamespaces() {
  return RunFor<std::vector<NamespaceUsage>>(
      nullptr, [&](const CallContext& ctx) { return transport_->ListNamespaces(ctx); });
}

absl::StatusOr<uint64_t> ClientImpl::ClearNamespace(NamespaceHandle ns) {
  return RunFor<uint64_t>(
      &ns.id, [&](const CallContext& ctx) { return transport_->ClearNamespace(ctx, ns.id); });
}

absl::StatusOr<uint32_t> ClientImpl::Pin(NamespaceHandle ns, absl::Span<const Key128> keys,
                                         bool pin) {
  if (keys.empty()) return 0u;
  return RunFor<uint32_t>(
      &ns.id, [&](const CallContext& ctx) { return transport_->Pin(ctx, ns.id, keys, pin); });
}

absl::Status ClientImpl::EndSession(NamespaceHandle ns, uint64_t session_id) {
  return Run(&ns.id, [&](const CallContext& ctx) {
    return transport_->EndSession(ctx, ns.id, session_id);
  });
}

absl::Status ClientImpl::RegisterMemory(const void* data, size_t size) {
  if (absl::Status s = Client::RegisterMemory(data, size); !s.ok()) return s;  // the range rule
  absl::Status s = transport_->RegisterMemory(data, size);
  if (s.ok()) {
    absl::MutexLock lock(&mu_);
    registered_.insert(data);
  }
  return s;
}

absl::Status ClientImpl::UnregisterMemory(const void* data) {
  {
    absl::MutexLock lock(&mu_);
    if (registered_.erase(data) == 0) {
      return absl::NotFoundError("memory at this address is not registered");
    }
  }
  return transport_->UnregisterMemory(data);
}

}  // namespace kvstash::client_internal
