#include "bench/kvstash_system.h"

#include <cstdio>
#include <type_traits>

#include "absl/strings/str_cat.h"
#include "kvstash/keys.h"

namespace kvstash::bench {

static_assert(std::is_same_v<BenchKey, Key128>, "bench keys are kvstash keys");

Namespace BenchNamespace() {
  Namespace ns;
  ns.tenant = "bench";
  ns.model_id = "kvstash-bench/synthetic";
  ns.num_layers = 32;
  ns.kv_heads = 8;
  ns.head_dim = 128;
  ns.chunk_tokens = 16;
  return ns;
}

ClientOptions BenchClientOptions(const KvstashOptions& options) {
  ClientOptions c;
  c.connections = 1;  // one channel per client thread, like the peers' one socket each
  c.deadline_ms = 60000;
  if (options.frame_bytes > 0) c.frame_bytes = options.frame_bytes;
  c.ucx_tls = options.ucx_tls;
  c.tls_ca_file = options.tls_ca_file;
  c.token = options.token;
  return c;
}

namespace {

absl::StatusOr<std::unique_ptr<Client>> ConnectClient(const std::string& uri,
                                                      const KvstashOptions& options) {
  return Client::Connect(uri, BenchClientOptions(options));
}

// One client thread's view of a Client (its own, and so its own channel, or a shared one)
// and namespace.
class KvstashConn : public Conn {
 public:
  KvstashConn(std::shared_ptr<Client> client, NamespaceHandle ns)
      : client_(std::move(client)), ns_(ns) {}

  absl::Status Put(const BenchKey& key, absl::Span<const char> value) override {
    PutItem item;
    item.key = key;
    item.data = value.data();
    item.size = value.size();
    absl::Status s = client_->Put(ns_, absl::MakeSpan(&item, 1));
    return s.ok() ? item.status : s;
  }

  absl::Status Get(const BenchKey& key, absl::Span<char> buf, size_t* size) override {
    GetItem item;
    item.key = key;
    item.data = buf.data();
    item.capacity = buf.size();
    absl::Status s = client_->Get(ns_, absl::MakeSpan(&item, 1));
    if (!s.ok()) return s;
    if (!item.status.ok()) return item.status;
    *size = item.size;
    return absl::OkStatus();
  }

  absl::Status GetBatch(absl::Span<const BenchKey> keys, absl::Span<char> buf,
                        size_t value_bytes) override {
    std::vector<GetItem> items(keys.size());
    for (size_t j = 0; j < keys.size(); ++j) {
      items[j].key = keys[j];
      items[j].data = buf.data() + j * value_bytes;
      items[j].capacity = value_bytes;
    }
    if (absl::Status s = client_->Get(ns_, absl::MakeSpan(items)); !s.ok()) return s;
    for (const GetItem& item : items) {
      if (!item.status.ok()) return item.status;
      if (absl::Status s = ExpectValueBytes(item.size, value_bytes); !s.ok()) return s;
    }
    return absl::OkStatus();
  }

  absl::StatusOr<uint32_t> Lookup(absl::Span<const BenchKey> keys) override {
    absl::StatusOr<LookupResult> r = client_->Lookup(ns_, keys);
    if (!r.ok()) return r.status();
    return r->hit_count;
  }

 private:
  std::shared_ptr<Client> client_;
  NamespaceHandle ns_;
};

}  // namespace

std::unique_ptr<Conn> NewClientConn(std::shared_ptr<Client> client, NamespaceHandle ns) {
  return std::make_unique<KvstashConn>(std::move(client), ns);
}

absl::StatusOr<std::unique_ptr<KvstashSystem>> KvstashSystem::Start(const KvstashOptions& options) {
  std::unique_ptr<KvstashSystem> system(new KvstashSystem(options));
  absl::Status s = system->Launch();
  if (!s.ok()) return s;
  return system;
}

absl::Status KvstashSystem::Launch() {
  const std::string& dir = options_.scratch_dir;
  const std::string ready = dir + "/kvstashd.ready";
  // A killed daemon leaves its ready file behind; its port is not the new one's.
  std::remove(ready.c_str());
  std::vector<std::string> argv = {
      options_.binary,
      "--listen",
      "127.0.0.1:0",
      "--ready_file",
      ready,
      "--set",
      absl::StrCat("storage.dram.capacity_bytes=", options_.dram_budget_bytes),
      "--set",
      absl::StrCat("data_dir=", dir, "/kvstash-data"),
      "--set",
      "metrics.listen=127.0.0.1:0",
      "--set",
      "ucx.listen=127.0.0.1:0"};
  if (!options_.ucx_tls.empty()) argv.insert(argv.end(), {"--set", "ucx.tls=" + options_.ucx_tls});
  if (options_.local_socket) {
    argv.insert(argv.end(), {"--set", "server.local_socket=" + dir + "/kvstash.sock"});
  }
  for (const std::string& kv : options_.extra_sets) argv.insert(argv.end(), {"--set", kv});
  auto child = ChildProcess::Spawn("kvstashd", argv, dir + "/kvstashd.log");
  if (!child.ok()) return child.status();
  child_ = *std::move(child);
  absl::StatusOr<ReadyInfo> info = WaitForKvstashdReady(ready, *child_, options_.ready_timeout_ms);
  if (!info.ok()) return info.status();
  address_ = info->grpc;
  metrics_address_ = info->metrics;
  ucx_address_ = info->ucx;
  local_socket_ = info->local;
  auto admin = ConnectClient(ClientUri(), options_);
  if (!admin.ok()) return admin.status();
  admin_ = *std::move(admin);
  return absl::OkStatus();
}

std::string KvstashSystem::ClientUri() const {
  if (!options_.ucx_tls.empty()) return "ucx://" + ucx_address_;
  return local_socket_.empty() ? "grpc://" + address_ : "unix://" + local_socket_;
}

absl::StatusOr<std::unique_ptr<Conn>> KvstashSystem::NewConn() { return NewConnTo(ClientUri()); }

absl::StatusOr<std::unique_ptr<Client>> KvstashSystem::NewClient() {
  return ConnectClient(ClientUri(), options_);
}

absl::StatusOr<std::unique_ptr<Conn>> KvstashSystem::NewGrpcConn() {
  return NewConnTo("grpc://" + address_);
}

absl::StatusOr<std::unique_ptr<Conn>> KvstashSystem::NewConnTo(const std::string& uri) {
  auto client = ConnectClient(uri, options_);
  if (!client.ok()) return client.status();
  absl::StatusOr<NamespaceHandle> ns = (*client)->OpenNamespace(BenchNamespace());
  if (!ns.ok()) return ns.status();
  return std::unique_ptr<Conn>(new KvstashConn(*std::move(client), *ns));
}

std::string KvstashSystem::ServerExit() {
  if (child_->Alive()) return "";
  // The daemon logs why it stopped (e.g. "shutdown requested signal=Terminated").
  return absl::StrCat(child_->ExitDescription(), "; log tail:\n", child_->LogTail(3));
}

absl::StatusOr<KvstashTierStats> KvstashSystem::Stats() {
  absl::StatusOr<ServerStats> s = admin_->Stats();
  if (!s.ok()) return s.status();
  KvstashTierStats out;
  out.dram_capacity_bytes = s->Of(ChunkTier::kDram).capacity_bytes;
  out.dram_used_bytes = s->Of(ChunkTier::kDram).used_bytes;
  out.chunks = s->chunks;
  out.evictions = s->evictions;
  out.nvme_chunks = s->Of(ChunkTier::kNvme).chunks;
  out.demotions = s->demotions;
  out.demotion_drops = s->demotion_drops;
  out.demotions_pending = s->demotions_pending;
  out.nvme_hits = s->nvme_hits;
  out.recovered_chunks = s->recovered_chunks;
  return out;
}

void KvstashSystem::Kill() {
  admin_.reset();
  child_->Kill();
}

absl::StatusOr<absl::Duration> KvstashSystem::Restart() {
  admin_.reset();
  child_->Stop(/*grace_ms=*/60000);
  const absl::Time begin = absl::Now();
  if (absl::Status s = Launch(); !s.ok()) return s;
  return absl::Now() - begin;
}

std::vector<BenchKey> PromptKeys(int chunks) {
  Namespace ns = BenchNamespace();
  std::vector<int32_t> tokens(static_cast<size_t>(chunks) * ns.chunk_tokens);
  for (size_t i = 0; i < tokens.size(); ++i) {
    tokens[i] = static_cast<int32_t>((i * 7919 + 13) % 128256);  // Llama-3-sized vocabulary
  }
  return KeyChain(ns).PrefixKeys(tokens);
}

}  // namespace kvstash::bench
