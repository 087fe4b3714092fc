#include "client/cluster_fake.h"

#include <algorithm>
#include <cstring>
#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "cluster/placement.h"
#include "common/xxh3_dispatch.h"

namespace kvstash::client_internal {
namespace {

// One member's Client over its FakeDaemon.
class FakeClient final : public Client {
 public:
  explicit FakeClient(std::shared_ptr<FakeDaemon> d) : d_(std::move(d)) {}

  absl::StatusOr<NamespaceHandle> OpenNamespace(const Namespace& spec) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    return NamespaceHandle{spec.Id()};
  }
  absl::StatusOr<LookupResult> Lookup(NamespaceHandle, absl::Span<const Key128> keys,
                                      uint32_t lease_ms, uint64_t) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    LookupResult r;
    while (r.hit_count < keys.size() && d_->chunks.contains(keys[r.hit_count])) {
      r.tiers.push_back(ChunkTier::kDram);
      ++r.hit_count;
    }
    if (lease_ms > 0 && r.hit_count > 0) {
      r.lease_id = d_->next_lease++;
      d_->leases.emplace_back(r.lease_id,
                              std::vector<Key128>(keys.begin(), keys.begin() + r.hit_count));
    }
    return r;
  }
  absl::Status Put(NamespaceHandle, absl::Span<PutItem> items) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    for (PutItem& item : items) {
      item.already_present = d_->chunks.contains(item.key);
      d_->chunks[item.key] = std::string(static_cast<const char*>(item.data), item.size);
      if (item.hints.pin) d_->pinned.insert(item.key);
      item.status = absl::OkStatus();
    }
    return absl::OkStatus();
  }
  absl::Status Get(NamespaceHandle, absl::Span<GetItem> items, uint64_t lease_id) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    for (GetItem& item : items) {
      d_->gets.emplace_back(lease_id, item.key);
      auto it = d_->chunks.find(item.key);
      if (it == d_->chunks.end()) {
        item.status = absl::NotFoundError("absent");
        continue;
      }
      const std::string& bytes = it->second;
      item.size = bytes.size();
      if (bytes.size() > item.capacity) {
        item.status = absl::ResourceExhaustedError("too small");
        continue;
      }
      std::memcpy(item.data, bytes.data(), bytes.size());
      item.checksum = XXH3_64bits(bytes.data(), bytes.size());
      if (d_->bad_checksum.contains(item.key)) item.checksum ^= 1;
      item.status =
          d_->data_loss.contains(item.key) ? absl::DataLossError("bad copy") : absl::OkStatus();
    }
    return absl::OkStatus();
  }
  std::future<absl::Status> PutAsync(NamespaceHandle ns, absl::Span<PutItem> items) override {
    std::promise<absl::Status> p;
    p.set_value(Put(ns, items));
    return p.get_future();
  }
  std::future<absl::Status> GetAsync(NamespaceHandle ns, absl::Span<GetItem> items,
                                     uint64_t lease_id) override {
    std::promise<absl::Status> p;
    p.set_value(Get(ns, items, lease_id));
    return p.get_future();
  }
  void RunAsync(std::function<void()> task) override { task(); }
  absl::StatusOr<std::vector<ChunkTier>> Exists(NamespaceHandle,
                                                absl::Span<const Key128> keys) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    std::vector<ChunkTier> out;
    for (const Key128& k : keys) {
      out.push_back(d_->chunks.contains(k) ? ChunkTier::kDram : ChunkTier::kNone);
    }
    return out;
  }
  absl::StatusOr<uint32_t> Delete(NamespaceHandle, absl::Span<const Key128> keys) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    uint32_t n = 0;
    for (const Key128& k : keys) n += d_->chunks.erase(k);
    return n;
  }
  absl::StatusOr<uint32_t> Pin(NamespaceHandle, absl::Span<const Key128> keys, bool pin) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    if (pin && d_->pin_quota_full) return absl::ResourceExhaustedError("pin quota");
    uint32_t n = 0;
    for (const Key128& k : keys) {
      if (!d_->chunks.contains(k)) break;
      n += pin ? d_->pinned.insert(k).second : d_->pinned.erase(k);
    }
    return n;
  }
  absl::StatusOr<uint64_t> ClearNamespace(NamespaceHandle) override {
    absl::MutexLock lock(&d_->mu);
    if (absl::Status s = Enter(); !s.ok()) return s;
    const uint64_t n = d_->chunks.size();
    d_->chunks.clear();
    return n;
  }
  absl::Status RegisterMemory(const void*, size_t) override {
    absl::MutexLock lock(&d_->mu);
    return d_->refuse_memory ? absl::InvalidArgumentError("cannot map") : absl::OkStatus();
  }
  absl::StatusOr<ServerStats> Stats(const NamespaceHandle*) override { return ServerStats{}; }
  absl::StatusOr<HealthInfo> Health() override { return HealthInfo{true, "fake", 1}; }

 private:
  absl::Status Enter() ABSL_EXCLUSIVE_LOCKS_REQUIRED(d_->mu) {
    ++d_->calls;
    return d_->refuse;
  }
  std::shared_ptr<FakeDaemon> d_;
};

}  // namespace

FakeCluster::FakeCluster(int n) {
  for (int i = 0; i < n; ++i) {
    cluster::Member m;
    m.id = absl::StrCat("m", i);
    m.grpc_address = absl::StrCat("fake", i, ":1");
    members_.push_back(m);
    daemons_.push_back(std::make_shared<FakeDaemon>());
  }
}

std::unique_ptr<ClusterClient> FakeCluster::Connect(ClientOptions options) {
  auto source = std::make_unique<HandSource>(members_);
  source_ = source.get();
  absl::flat_hash_map<std::string, std::shared_ptr<FakeDaemon>> by_uri;
  for (size_t i = 0; i < members_.size(); ++i) {
    by_uri[absl::StrCat("grpc://", members_[i].grpc_address)] = daemons_[i];
  }
  auto connect = [by_uri](const std::string& uri,
                          const ClientOptions&) -> absl::StatusOr<std::unique_ptr<Client>> {
    auto it = by_uri.find(uri);
    if (it == by_uri.end()) return absl::UnavailableError(absl::StrCat("no fake at ", uri));
    return std::unique_ptr<Client>(new FakeClient(it->second));
  };
  auto client = ClusterClient::Create(std::move(source), options, connect);
  return client.ok() ? *std::move(client) : nullptr;
}

FakeDaemon& FakeCluster::daemon(const std::string& id) {
  for (size_t i = 0; i < members_.size(); ++i) {
    if (members_[i].id == id) return *daemons_[i];
  }
  return *daemons_.front();
}

std::vector<std::string> FakeCluster::Owners(const std::vector<cluster::Member>& members,
                                             const Key128& key, size_t n) {
  cluster::Placement placement(members);
  std::vector<std::string> out;
  for (uint32_t i : placement.Owners(key, n)) out.push_back(placement.members()[i].id);
  return out;
}

}  // namespace kvstash::client_internal
