#include "bench/cluster_conns.h"

#include <future>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/kvstash_system.h"

namespace kvstash::bench {

absl::StatusOr<std::shared_ptr<const RouterClients>> RouterClients::Connect(
    const std::vector<std::string>& ids, const std::vector<std::string>& uris,
    const ClientOptions& options) {
  std::vector<cluster::Member> members;
  for (size_t i = 0; i < ids.size(); ++i)
    members.push_back({.id = ids[i], .grpc_address = uris[i]});
  std::shared_ptr<RouterClients> r(new RouterClients(cluster::Placement(std::move(members))));
  for (const cluster::Member& m : r->placement_.members()) {
    absl::StatusOr<std::unique_ptr<Client>> c = Client::Connect(m.grpc_address, options);
    if (!c.ok()) return c.status();
    absl::StatusOr<NamespaceHandle> ns = (*c)->OpenNamespace(BenchNamespace());
    if (!ns.ok()) return ns.status();
    r->clients_.push_back(*std::move(c));
    r->ns_.push_back(*ns);
  }
  return std::shared_ptr<const RouterClients>(std::move(r));
}

namespace {

class RouterConn : public Conn {
 public:
  explicit RouterConn(std::shared_ptr<const RouterClients> router) : r_(std::move(router)) {}

  absl::Status Put(const BenchKey& key, absl::Span<const char> value) override {
    const uint32_t m = r_->placement().Owner(key);
    PutItem item;
    item.key = key;
    item.data = value.data();
    item.size = value.size();
    absl::Status s = r_->client(m).Put(r_->ns(m), absl::MakeSpan(&item, 1));
    return s.ok() ? item.status : s;
  }

  absl::Status Get(const BenchKey& key, absl::Span<char> buf, size_t* size) override {
    const uint32_t m = r_->placement().Owner(key);
    GetItem item;
    item.key = key;
    item.data = buf.data();
    item.capacity = buf.size();
    absl::Status s = r_->client(m).Get(r_->ns(m), absl::MakeSpan(&item, 1));
    if (!s.ok()) return s;
    *size = item.size;
    return item.status;
  }

  absl::StatusOr<uint32_t> Lookup(absl::Span<const BenchKey> keys) override;

 private:
  std::shared_ptr<const RouterClients> r_;
};

absl::StatusOr<uint32_t> RouterConn::Lookup(absl::Span<const BenchKey> keys) {
  const size_t n = r_->placement().size();
  std::vector<uint32_t> owner(keys.size()), position(keys.size());
  std::vector<std::vector<Key128>> per_member(n);
  for (size_t i = 0; i < keys.size(); ++i) {
    owner[i] = r_->placement().Owner(keys[i]);
    position[i] = static_cast<uint32_t>(per_member[owner[i]].size());
    per_member[owner[i]].push_back(keys[i]);
  }
  // Every member but the first involved runs on its client's async threads; the first on
  // this thread, so a lookup on one member costs no hand-off.
  std::vector<std::future<absl::StatusOr<LookupResult>>> pending(n);
  int local = -1;
  for (uint32_t m = 0; m < n; ++m) {
    if (per_member[m].empty()) continue;
    if (local < 0) {
      local = static_cast<int>(m);
      continue;
    }
    auto task = std::make_shared<std::packaged_task<absl::StatusOr<LookupResult>()>>(
        [this, m, &per_member] { return r_->client(m).Lookup(r_->ns(m), per_member[m]); });
    pending[m] = task->get_future();
    r_->client(m).RunAsync([task] { (*task)(); });
  }
  std::vector<uint32_t> hits(n);
  absl::Status error;
  for (uint32_t m = 0; m < n; ++m) {
    if (per_member[m].empty()) continue;
    absl::StatusOr<LookupResult> r = static_cast<int>(m) == local
                                         ? r_->client(m).Lookup(r_->ns(m), per_member[m])
                                         : pending[m].get();
    if (!r.ok() && error.ok()) error = r.status();
    if (r.ok()) hits[m] = r->hit_count;
  }
  if (!error.ok()) return error;
  uint32_t prefix = 0;
  while (prefix < keys.size() && position[prefix] < hits[owner[prefix]]) ++prefix;
  return prefix;
}

}  // namespace

std::unique_ptr<Conn> NewRouterConn(std::shared_ptr<const RouterClients> router) {
  return std::make_unique<RouterConn>(std::move(router));
}

}  // namespace kvstash::bench
