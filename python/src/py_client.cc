#include "py_client.h"

#include <memory>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "buffers.h"
#include "completions.h"
#include "errors.h"
#include "kvstash/client.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"
#include "ops.h"
#include "py_cluster.h"
#include "py_namespace.h"
#include "py_options.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

// Every ServerStats counter by name, and each tier's fields: client.stats().
#define KVSTASH_STAT(name, ...) {#name, &ServerStats::name},
#define KVSTASH_NVME_STAT(name, client, ...) {#client, &ServerStats::client},
#define KVSTASH_TIER_STAT(name, ...) {#name, &ServerTierStats::name},
const std::pair<const char*, uint64_t ServerStats::*> kStatFields[] = {
    KVSTASH_STORE_COUNTERS(KVSTASH_STAT) KVSTASH_NVME_COUNTERS(KVSTASH_NVME_STAT)};
const std::pair<const char*, uint64_t ServerTierStats::*> kTierFields[] = {
    KVSTASH_TIER_STATS(KVSTASH_TIER_STAT)};
#undef KVSTASH_STAT
#undef KVSTASH_NVME_STAT
#undef KVSTASH_TIER_STAT

class PyCompletions {
 public:
  PyCompletions() : queue_(std::make_shared<CompletionQueue>()) {}
  const std::shared_ptr<CompletionQueue>& queue() const { return queue_; }
  int fileno() const { return queue_->fd(); }
  bool Wait(double timeout_s) const {
    int ms = timeout_s < 0 ? -1 : static_cast<int>(timeout_s * 1000);
    nb::gil_scoped_release release;
    return queue_->Wait(ms);
  }
  // [(token, value, None) or (token, None, kvstash.Error)] for every finished call.
  nb::list Drain() {
    nb::list out;
    for (auto& [token, op] : queue_->TakeAll()) {
      try {
        out.append(nb::make_tuple(token, op->Result(), nb::none()));
      } catch (const StatusError& e) {
        out.append(nb::make_tuple(token, nb::none(), ErrorObject(e.status())));
      }
    }
    return out;
  }

 private:
  std::shared_ptr<CompletionQueue> queue_;
};

class PyClient {
 public:
  PyClient(const std::string& uri, const nb::dict& kwargs) : uri_(uri) {
    ClientOptions options = OptionsFromKwargs(kwargs);
    absl::StatusOr<std::unique_ptr<Client>> client;
    {
      nb::gil_scoped_release release;
      client = Client::Connect(uri, options);
    }
    ThrowIfError(client.status());
    client_ = std::shared_ptr<Client>(std::move(*client));
  }

  // Waits for every asynchronous call to finish, then drops the connections (once the
  // synchronous calls still running on other threads have returned).
  void Close() {
    std::shared_ptr<Client> client = std::move(client_);
    nb::gil_scoped_release release;
    client.reset();
  }

  NamespaceHandle OpenNamespace(const PyNamespace& ns) {
    std::shared_ptr<Client> client = this->client();
    absl::StatusOr<NamespaceHandle> handle;
    {
      nb::gil_scoped_release release;
      handle = client->OpenNamespace(ns.spec());
    }
    ThrowIfError(handle.status());
    return *handle;
  }

  nb::object Call(const OpPtr& op) {
    std::shared_ptr<Client> c = client();
    {
      nb::gil_scoped_release release;
      op->Run(*c);
    }
    return op->Result();
  }

  // The task holds the Client by reference: the Client's destructor runs every task
  // before it tears anything down.
  void Submit(PyCompletions& completions, uint64_t token, OpPtr op) {
    std::shared_ptr<Client> client = this->client();
    Client* c = client.get();
    std::shared_ptr<CompletionQueue> queue = completions.queue();
    c->RunAsync([c, queue, token, op = std::move(op)]() mutable {
      op->Run(*c);
      queue->Push(token, std::move(op));
    });
  }

  nb::dict Stats(const PyNamespace* ns) {
    std::shared_ptr<Client> client = this->client();
    absl::StatusOr<ServerStats> stats;
    NamespaceHandle handle{ns != nullptr ? ns->id() : Key128{}};
    {
      nb::gil_scoped_release release;
      stats = client->Stats(ns != nullptr ? &handle : nullptr);
    }
    ThrowIfError(stats.status());
    nb::dict out;
    for (const auto& [name, member] : kStatFields) out[name] = (*stats).*member;
    for (const ServerTierStats& t : stats->tiers) {
      for (const auto& [name, member] : kTierFields) {
        out[absl::StrCat(ChunkTierName(t.tier), "_", name).c_str()] = t.*member;
      }
    }
    return out;
  }

  // [(id, Namespace | None, tenant, [(tier, chunks, bytes)], pinned_bytes)] for
  // kvstash._types.NamespaceUsage.
  nb::list ListNamespaces() {
    std::shared_ptr<Client> client = this->client();
    absl::StatusOr<std::vector<NamespaceUsage>> list;
    {
      nb::gil_scoped_release release;
      list = client->ListNamespaces();
    }
    ThrowIfError(list.status());
    nb::list out;
    for (const NamespaceUsage& u : *list) {
      nb::object spec = u.registered ? nb::cast(PyNamespace(u.spec)) : nb::none();
      nb::list tiers;
      for (const TierUsage& t : u.tiers) {
        tiers.append(nb::make_tuple(static_cast<int>(t.tier), t.chunks, t.bytes));
      }
      out.append(nb::make_tuple(KeyBytes(u.id), spec, u.tenant, tiers, u.pinned_bytes));
    }
    return out;
  }

  uint64_t ClearNamespace(const PyNamespace& ns) {
    return Blocking<uint64_t>([&](Client& c) { return c.ClearNamespace({ns.id()}); });
  }

  uint32_t Pin(const PyNamespace& ns, nb::handle keys, bool pin) {
    std::vector<Key128> k = ParseKeys(keys);
    return Blocking<uint32_t>([&](Client& c) { return c.Pin({ns.id()}, k, pin); });
  }

  void EndSession(const PyNamespace& ns, uint64_t session_id) {
    std::shared_ptr<Client> client = this->client();
    absl::Status s;
    {
      nb::gil_scoped_release release;
      s = client->EndSession({ns.id()}, session_id);
    }
    ThrowIfError(s);
  }

  nb::dict Health() {
    std::shared_ptr<Client> client = this->client();
    absl::StatusOr<HealthInfo> health;
    {
      nb::gil_scoped_release release;
      health = client->Health();
    }
    ThrowIfError(health.status());
    nb::dict out;
    out["serving"] = health->serving;
    out["version"] = health->version;
    out["uptime_ms"] = health->uptime_ms;
    return out;
  }

  // Client::Cluster() as kvstash.ClusterStatus's fields (py_cluster.h).
  nb::dict Cluster() {
    std::shared_ptr<Client> client = this->client();
    absl::StatusOr<ClusterStatus> status;
    {
      nb::gil_scoped_release release;
      status = client->Cluster();
    }
    ThrowIfError(status.status());
    return ClusterStatusDict(*status);
  }

  const std::string& uri() const { return uri_; }

 private:
  std::shared_ptr<Client> client() const {
    if (client_ == nullptr) throw StatusError(absl::FailedPreconditionError("client is closed"));
    return client_;
  }

  // Runs `call` without the GIL and returns its value, or throws its error.
  template <typename T, typename Call>
  T Blocking(Call call) {
    std::shared_ptr<Client> client = this->client();
    absl::StatusOr<T> result;
    {
      nb::gil_scoped_release release;
      result = call(*client);
    }
    ThrowIfError(result.status());
    return *result;
  }

  std::string uri_;
  std::shared_ptr<Client> client_;  // touched only with the GIL held
};

NamespaceHandle Handle(const PyNamespace& ns) { return NamespaceHandle{ns.id()}; }

// kvstash._native.PutHints: kvstash/hints.h's PutHints; `parent` is None or 16 bytes.
void BindPutHints(nb::module_& m) {
  nb::class_<PutHints>(m, "PutHints")
      .def(nb::init<>())
      .def_rw("session_id", &PutHints::session_id)
      .def_rw("ttl_ms", &PutHints::ttl_ms)
      .def_rw("pin", &PutHints::pin)
      .def_prop_rw(
          "priority", [](const PutHints& h) { return static_cast<int>(h.priority); },
          [](PutHints& h, int v) {
            // Out-of-range values of the byte are refused here; the daemon names the others.
            if (v < 0 || v > 255) ThrowInvalid(absl::StrCat("priority ", v, " is not a priority"));
            h.priority = static_cast<Priority>(v);
          })
      .def_prop_rw(
          "parent",
          [](const PutHints& h) -> nb::object {
            return h.has_parent ? nb::object(KeyBytes(h.parent)) : nb::none();
          },
          [](PutHints& h, nb::handle v) {
            h.has_parent = !v.is_none();
            h.parent = h.has_parent ? ParseKey(v, "parent") : Key128{};
          },
          nb::arg("value").none());
}

}  // namespace

void BindClient(nb::module_& m) {
  m.def("default_options", &DefaultOptions);
  BindPutHints(m);

  nb::class_<PyCompletions>(m, "Completions")
      .def(nb::init<>())
      .def("fileno", &PyCompletions::fileno)
      .def("wait", &PyCompletions::Wait, nb::arg("timeout_s") = -1.0)
      .def("drain", &PyCompletions::Drain);

  nb::class_<PyClient>(m, "Client")
      .def(nb::init<const std::string&, const nb::dict&>(), nb::arg("uri"), nb::arg("options"))
      .def_prop_ro("uri", &PyClient::uri)
      .def("close", &PyClient::Close)
      .def("open_namespace", [](PyClient& c, const PyNamespace& ns) { c.OpenNamespace(ns); })
      .def("put",
           [](PyClient& c, const PyNamespace& ns, nb::handle keys, nb::handle buffers,
              uint32_t tokens, uint32_t format, const PutHints& hints, bool chain) {
             return c.Call(MakePutOp(Handle(ns), keys, buffers, tokens, format, hints, chain));
           })
      .def("get_into",
           [](PyClient& c, const PyNamespace& ns, nb::handle keys, nb::handle buffers,
              uint64_t lease_id) { return c.Call(MakeGetOp(Handle(ns), keys, buffers, lease_id)); })
      .def("lookup",
           [](PyClient& c, const PyNamespace& ns, nb::handle keys, uint32_t lease_ms,
              uint64_t session_id) {
             return c.Call(MakeLookupOp(Handle(ns), keys, lease_ms, session_id));
           })
      .def("exists", [](PyClient& c, const PyNamespace& ns,
                        nb::handle keys) { return c.Call(MakeExistsOp(Handle(ns), keys)); })
      .def("delete", [](PyClient& c, const PyNamespace& ns,
                        nb::handle keys) { return c.Call(MakeDeleteOp(Handle(ns), keys)); })
      .def("submit_put",
           [](PyClient& c, PyCompletions& q, uint64_t token, const PyNamespace& ns, nb::handle keys,
              nb::handle buffers, uint32_t tokens, uint32_t format, const PutHints& hints,
              bool chain) {
             c.Submit(q, token, MakePutOp(Handle(ns), keys, buffers, tokens, format, hints, chain));
           })
      .def("submit_get_into",
           [](PyClient& c, PyCompletions& q, uint64_t token, const PyNamespace& ns, nb::handle keys,
              nb::handle buffers, uint64_t lease_id) {
             c.Submit(q, token, MakeGetOp(Handle(ns), keys, buffers, lease_id));
           })
      .def("submit_lookup",
           [](PyClient& c, PyCompletions& q, uint64_t token, const PyNamespace& ns, nb::handle keys,
              uint32_t lease_ms, uint64_t session_id) {
             c.Submit(q, token, MakeLookupOp(Handle(ns), keys, lease_ms, session_id));
           })
      .def("submit_exists",
           [](PyClient& c, PyCompletions& q, uint64_t token, const PyNamespace& ns,
              nb::handle keys) { c.Submit(q, token, MakeExistsOp(Handle(ns), keys)); })
      .def("submit_delete",
           [](PyClient& c, PyCompletions& q, uint64_t token, const PyNamespace& ns,
              nb::handle keys) { c.Submit(q, token, MakeDeleteOp(Handle(ns), keys)); })
      .def("stats", &PyClient::Stats, nb::arg("ns").none() = nb::none())
      .def("health", &PyClient::Health)
      .def("cluster", &PyClient::Cluster)
      .def("list_namespaces", &PyClient::ListNamespaces)
      .def("clear_namespace", &PyClient::ClearNamespace)
      .def("pin", &PyClient::Pin)
      .def("end_session", &PyClient::EndSession);
}

}  // namespace kvstash::python
