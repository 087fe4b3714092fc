// kvstash_grpc_floor: what one gRPC call costs on this host, next to what kvstashd's own
// calls cost, in one run. Each cell makes `--calls` sequential calls from one thread over
// loopback; a round takes every cell's p50 and the report prints the medians of `--rounds`:
//
//   bare-callback   a bare gRPC server (this program, re-run with --serve) on the callback
//                   API, as kvstashd serves, answering an empty Health: the floor
//   bare-async      the same on the async API, answered on its completion queue's thread
//   kvstash-health  kvstashd's Health over grpc://
//   kvstash-lookup  kvstashd's Lookup of a `--prompt`-key prompt, every key present
//
//   kvstash_grpc_floor [--kvstashd PATH] [--calls 2000] [--rounds 5] [--prompt 1000]
//                      [--json FILE]
//
// Each cell is also printed as a ratio to bare-callback, the gRPC floor under it.
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/str_cat.h"
#include "bench/kvstash_system.h"
#include "bench/process.h"
#include "client/grpc_call.h"
#include "kvstash/client.h"
#include "kvstash/v1/kvstash.grpc.pb.h"

namespace kvstash::bench {
namespace {

using v1::KvStash;

struct Flags {
  std::string kvstashd = KVSTASH_BENCH_KVSTASHD, json;
  int calls = 2000, rounds = 5, prompt = 1000;
};

bool Parse(int argc, char** argv, Flags* f) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    const bool has = i + 1 < argc;
    if (has && (a == "--kvstashd" || a == "--json")) {
      (a == "--json" ? f->json : f->kvstashd) = argv[++i];
    } else if (has && (a == "--calls" || a == "--rounds" || a == "--prompt")) {
      int* n = a == "--calls" ? &f->calls : a == "--rounds" ? &f->rounds : &f->prompt;
      *n = std::atoi(argv[++i]);
    } else {
      std::fprintf(stderr,
                   "usage: %s [--kvstashd PATH] [--calls N] [--rounds N] [--prompt KEYS] "
                   "[--json FILE]\n",
                   argv[0]);
      return false;
    }
  }
  return f->calls > 0 && f->rounds > 0 && f->prompt > 0 && f->prompt <= 65536;
}

// Health answered inline on the callback API, with nothing in the reply.
class CallbackFloor final : public KvStash::WithCallbackMethod_Health<KvStash::Service> {
 public:
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* context, const v1::HealthRequest*,
                                   v1::HealthResponse*) override {
    grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
    reactor->Finish(grpc::Status::OK);
    return reactor;
  }
};

// Health on the async API: one thread takes calls from its completion queue and answers
// each there, with a few calls always requested.
class AsyncFloor {
 public:
  explicit AsyncFloor(grpc::ServerBuilder* builder) : cq_(builder->AddCompletionQueue()) {
    builder->RegisterService(&service_);
  }
  // Call after the server started. The thread serves until the process ends.
  void Start() {
    std::thread([this] { Serve(); }).detach();
  }

 private:
  struct Call {
    grpc::ServerContext context;
    v1::HealthRequest request;
    v1::HealthResponse response;
    grpc::ServerAsyncResponseWriter<v1::HealthResponse> writer{&context};
    bool answered = false;
  };

  void Request() {
    auto* call = new Call;
    service_.RequestHealth(&call->context, &call->request, &call->writer, cq_.get(), cq_.get(),
                           call);
  }
  void Serve() {
    for (int i = 0; i < 4; ++i) Request();
    void* tag = nullptr;
    bool ok = false;
    while (cq_->Next(&tag, &ok)) {
      auto* call = static_cast<Call*>(tag);
      if (!ok || call->answered) {
        delete call;
        continue;
      }
      Request();
      call->answered = true;
      call->writer.Finish(call->response, grpc::Status::OK, call);
    }
  }

  KvStash::WithAsyncMethod_Health<KvStash::Service> service_;
  std::unique_ptr<grpc::ServerCompletionQueue> cq_;
};

// p50 in microseconds of `calls` calls of `call` (false: it failed; the cell then fails).
bool P50(int calls, const std::function<bool()>& call, double* p50_us) {
  std::vector<double> us;
  us.reserve(calls);
  for (int i = 0; i < calls; ++i) {
    const auto start = std::chrono::steady_clock::now();
    if (!call()) return false;
    us.push_back(std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start)
                     .count());
  }
  std::nth_element(us.begin(), us.begin() + us.size() / 2, us.end());
  *p50_us = us[us.size() / 2];
  return true;
}

// Health through the client library's own unary call path (client/grpc_call.h), so the
// bare cells differ from kvstashd's only in the server.
std::function<bool()> HealthCall(grpc::GenericStub* stub) {
  return [stub] {
    return client_internal::RunUnaryCall(stub, client_internal::CallContext{},
                                         "/kvstash.v1.KvStash/Health", std::string())
        .ok();
  };
}

double Median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

// --serve PORT_FILE: runs both bare servers until killed, their ports written to PORT_FILE
// ("CALLBACK_PORT ASYNC_PORT") once they listen. They run in a process of their own, as
// kvstashd does, so that no gRPC thread is shared with the clients.
int Serve(const std::string& port_file) {
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  CallbackFloor callback_service;
  builder.RegisterService(&callback_service);
  // A second server: a method is served by one API per server.
  grpc::ServerBuilder async_builder;
  int async_port = 0;
  async_builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &async_port);
  AsyncFloor async_floor(&async_builder);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  std::unique_ptr<grpc::Server> async_server = async_builder.BuildAndStart();
  if (server == nullptr || async_server == nullptr) return 1;
  async_floor.Start();
  const std::string tmp = port_file + ".tmp";
  FILE* out = std::fopen(tmp.c_str(), "w");
  if (out == nullptr) return 1;
  std::fprintf(out, "%d %d\n", port, async_port);
  std::fclose(out);
  if (std::rename(tmp.c_str(), port_file.c_str()) != 0) return 1;
  server->Wait();
  return 0;
}

// Starts this program with --serve and reads the bare servers' ports.
absl::Status StartFloorServers(const ScratchDir& dir, std::unique_ptr<ChildProcess>* child,
                               int* callback_port, int* async_port) {
  const std::string port_file = dir.Sub("floor.ports");
  absl::StatusOr<std::unique_ptr<ChildProcess>> spawned = ChildProcess::Spawn(
      "floor servers", {"/proc/self/exe", "--serve", port_file}, dir.Sub("floor.log"));
  if (!spawned.ok()) return spawned.status();
  *child = std::move(*spawned);
  for (int i = 0; i < 300; ++i) {
    if (FILE* in = std::fopen(port_file.c_str(), "r")) {
      const int n = std::fscanf(in, "%d %d", callback_port, async_port);
      std::fclose(in);
      if (n == 2) return absl::OkStatus();
    }
    if (!(*child)->Alive()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return absl::UnavailableError("the floor servers did not start: " + (*child)->LogTail(5));
}

int Run(const Flags& f) {
  auto dir = ScratchDir::Create("kvstash-grpc-floor");
  if (!dir.ok()) return 1;
  std::unique_ptr<ChildProcess> floor_servers;
  int port = 0, async_port = 0;
  if (absl::Status s = StartFloorServers(**dir, &floor_servers, &port, &async_port); !s.ok()) {
    std::fprintf(stderr, "%s\n", s.ToString().c_str());
    return 1;
  }
  KvstashOptions options;
  options.binary = f.kvstashd;
  options.scratch_dir = (*dir)->path();
  options.dram_budget_bytes = uint64_t{1} << 30;
  absl::StatusOr<std::unique_ptr<KvstashSystem>> daemon = KvstashSystem::Start(options);
  absl::StatusOr<std::unique_ptr<Client>> client =
      daemon.ok() ? (*daemon)->NewClient() : daemon.status();
  absl::StatusOr<NamespaceHandle> ns =
      client.ok() ? (*client)->OpenNamespace(BenchNamespace()) : client.status();
  std::vector<Key128> keys(f.prompt);
  std::vector<char> value(4096, 'p');
  std::vector<PutItem> items(f.prompt);
  for (int i = 0; i < f.prompt; ++i) {
    keys[i] = Key128{static_cast<uint8_t>(i), static_cast<uint8_t>(i >> 8), 0x46};
    items[i].key = keys[i];
    items[i].data = value.data();
    items[i].size = value.size();
  }
  absl::Status put = ns.ok() ? (*client)->Put(*ns, absl::MakeSpan(items)) : ns.status();
  if (!put.ok()) {
    std::fprintf(stderr, "kvstashd: %s\n", put.ToString().c_str());
    return 1;
  }

  auto channel = [](int p) {
    return grpc::CreateChannel(absl::StrCat("127.0.0.1:", p), grpc::InsecureChannelCredentials());
  };
  grpc::GenericStub callback_stub(channel(port));
  grpc::GenericStub async_stub(channel(async_port));
  Client& kv = **client;
  const NamespaceHandle handle = *ns;
  const std::vector<std::pair<std::string, std::function<bool()>>> cells = {
      {"bare-callback", HealthCall(&callback_stub)},
      {"bare-async", HealthCall(&async_stub)},
      {"kvstash-health", [&kv] { return kv.Health().ok(); }},
      {"kvstash-lookup",
       [&] {
         absl::StatusOr<LookupResult> r = kv.Lookup(handle, keys);
         return r.ok() && r->hit_count == keys.size();
       }},
  };
  std::map<std::string, std::vector<double>> p50s;
  for (int round = 0; round <= f.rounds; ++round) {  // round 0 warms up and is not kept
    for (const auto& [name, call] : cells) {
      double p50 = 0;
      if (!P50(f.calls, call, &p50)) {
        std::fprintf(stderr, "%s: a call failed\n", name.c_str());
        return 1;
      }
      if (round > 0) p50s[name].push_back(p50);
    }
  }

  const double floor = Median(p50s["bare-callback"]);
  FILE* json = f.json.empty() ? nullptr : std::fopen(f.json.c_str(), "a");
  std::printf("== gRPC unary p50 over loopback, medians of %d rounds of %d calls ==\n", f.rounds,
              f.calls);
  for (const auto& [name, unused] : cells) {
    const double m = Median(p50s[name]);
    std::printf("%-15s p50 %7.0f us  %5.2fx bare-callback\n", name.c_str(), m, m / floor);
    if (json != nullptr) {
      std::fprintf(json,
                   "{\"cell\":\"%s\",\"p50_us\":%.1f,\"ratio_to_floor\":%.3f,\"calls\":%d,"
                   "\"rounds\":%d,\"prompt\":%d}\n",
                   name.c_str(), m, m / floor, f.calls, f.rounds, f.prompt);
    }
  }
  if (json != nullptr) std::fclose(json);
  return 0;
}

}  // namespace
}  // namespace kvstash::bench

int main(int argc, char** argv) {
  kvstash::bench::Flags flags;
  if (argc == 3 && std::string(argv[1]) == "--serve") return kvstash::bench::Serve(argv[2]);
  if (!kvstash::bench::Parse(argc, argv, &flags)) return 2;
  return kvstash::bench::Run(flags);
}
