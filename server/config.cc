#include "server/config.h"

#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/bits.h"
#include "common/byte_size.h"
#include "common/ucx_setup.h"
#include "proto/ucx_wire.h"
#include "server/config_reader.h"

namespace kvstash::server {

const char kDefaultConfigYaml[] =
    R"yaml(# kvstashd configuration. Sizes take KiB/MiB/GiB/TiB (or KB/MB/GB/TB) suffixes.
server:
  grpc_listen: "127.0.0.1:7070"   # HOST:PORT; port 0 picks a free port
  max_frame_bytes: 4MiB           # largest payload per Put frame
  send_frame_bytes: 1MiB          # payload per Get frame
  max_keys_per_request: 65536     # keys per Lookup/Get/Exists/Delete, chunks per Put
  shutdown_grace_ms: 10000        # in-flight calls may finish for this long on SIGTERM
data_dir: "./var/kvstash"
log:
  level: info                     # debug | info | warn | error
  format: logfmt                  # logfmt | json
storage:
  max_chunk_bytes: 256MiB
  max_lease_ms: 60000
  index_shards: 64
  dram:
    capacity_bytes: 1GiB
    page_bytes: 1MiB
    huge_pages: auto              # off | auto | on
    prefault: true                # fault the arena in at start, not on the put path
    eviction: lru
  nvme:                           # RocksDB tier below DRAM (docs/storage-format.md)
    enabled: true                 # false: DRAM only, evicted chunks are dropped
    path: ""                      # "" = <data_dir>/nvme; created at start-up
    capacity_bytes: 16GiB         # payload budget; the directory settles within ~1.25x
    demotion_threads: 1           # threads writing DRAM evictions to NVMe
    read_threads: 4               # threads reading NVMe hits for gRPC gets
    demotion_queue_chunks: 16     # evictions waiting to be written; beyond: dropped
    demotion_wait_ms: 0           # longest such wait; 0: never block a put, drop at once
    clean_window_percent: 25      # coldest % of DRAM written to NVMe ahead of eviction
    flush_interval_ms: 1000       # write-back chunks are durable at most this long after
    write_through: false          # also write every put to NVMe before acknowledging it
    sync_writes: false            # fsync the WAL per write (survives power loss, slower)
    promote_on_hit: true          # copy a chunk served from NVMe into DRAM
    low_priority_background: true # demotion, cleaning, RocksDB flushes at nice 19
metrics:                          # HTTP endpoint: /metrics, /healthz, /readyz
  enabled: true
  listen: "127.0.0.1:7071"        # HOST:PORT; port 0 picks a free port
  namespace_labels: false         # per-namespace series (bounded by max_namespaces)
  max_namespaces: 64
ucx:                              # UCX data plane (docs/protocol.md, "UCX data plane")
  enabled: true
  listen: "127.0.0.1:7072"        # HOST:PORT; port 0 picks a free port
  tls: ""                         # UCX transports, e.g. "tcp" or "sm,self"; "" = UCX_TLS
  rndv_thresh_bytes: 0            # rendezvous from this payload size; 0 = UCX default
  tcp_segment_bytes: 256KiB       # UCX TCP fragment size; clients must use the same
  worker_threads: 1               # threads progressing UCX workers
  direct_access: true             # same-host clients map the DRAM arena (trusted clients)
)yaml";

namespace {

using HugePages = storage::ChunkStoreOptions::HugePages;

constexpr uint64_t kKiB = 1ull << 10;
constexpr uint64_t kGiB = 1ull << 30;
constexpr int64_t kDayMs = 24ll * 3600 * 1000;



// Applies one --set override to the document tree, creating sections as needed. Unknown
// keys created here are reported later by the schema walk, with their full dotted name.
absl::Status ApplyOverride(const ConfigOverride& o, YAML::Node* root) {
  std::vector<std::string> parts = absl::StrSplit(o.key, '.');
  for (const std::string& p : parts) {
    if (p.empty())
      return absl::InvalidArgumentError(absl::StrCat("--set: bad key \"", o.key, "\""));
  }
  YAML::Node value(o.value);
  try {
    if (!o.literal) value = YAML::Load(o.value);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(absl::StrCat(o.key, ": bad value in --set: ", e.msg));
  }
  YAML::Node cur = *root;
  std::string path;
  for (size_t i = 0; i + 1 < parts.size(); ++i) {
    absl::StrAppend(&path, i == 0 ? "" : ".", parts[i]);
    YAML::Node child = cur[parts[i]];
    if (!child.IsDefined() || child.IsNull()) {
      child = YAML::Node(YAML::NodeType::Map);
      cur[parts[i]] = child;
    } else if (!child.IsMap()) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ": is a value, not a section; cannot set ", o.key));
    }
    cur.reset(child);
  }
  cur[parts.back()] = value;
  return absl::OkStatus();
}

void ReadGrpc(ConfigReader& r, GrpcConfig* c) {
  r.String("grpc_listen", &c->grpc_listen);
  r.Size("max_frame_bytes", 4 * kKiB, kGiB, &c->max_frame_bytes);
  r.Size("send_frame_bytes", 4 * kKiB, kGiB, &c->send_frame_bytes);
  r.Int("max_keys_per_request", 1, 1 << 24, &c->max_keys_per_request);
  r.Int("shutdown_grace_ms", 0, kDayMs, &c->shutdown_grace_ms);
}

void ReadLog(ConfigReader& r, LogConfig* c) {
  r.Choice("level",
           {{"debug", LogLevel::kDebug},
            {"info", LogLevel::kInfo},
            {"warn", LogLevel::kWarn},
            {"error", LogLevel::kError}},
           &c->level);
  r.Choice("format", {{"logfmt", LogFormat::kLogfmt}, {"json", LogFormat::kJson}}, &c->format);
}

void ReadNvme(ConfigReader& r, NvmeConfig* c) {
  r.Choice("enabled", {{"true", true}, {"false", false}}, &c->enabled);
  r.String("path", &c->path);
  r.Size("capacity_bytes", 1ull << 20, std::numeric_limits<uint64_t>::max(), &c->capacity_bytes);
  r.Int("demotion_threads", 1, 64, &c->demotion_threads);
  r.Int("read_threads", 1, 64, &c->read_threads);
  r.Int("demotion_queue_chunks", 1, 1 << 20, &c->demotion_queue_chunks);
  r.Int("demotion_wait_ms", 0, 3600000, &c->demotion_wait_ms);
  r.Int("clean_window_percent", 0, 100, &c->clean_window_percent);
  r.Int("flush_interval_ms", 0, 3600000, &c->flush_interval_ms);
  r.Choice("write_through", {{"true", true}, {"false", false}}, &c->write_through);
  r.Choice("sync_writes", {{"true", true}, {"false", false}}, &c->sync_writes);
  r.Choice("promote_on_hit", {{"true", true}, {"false", false}}, &c->promote_on_hit);
  r.Choice("low_priority_background", {{"true", true}, {"false", false}},
           &c->low_priority_background);
  r.RejectUnknown();
}

void ReadMetrics(ConfigReader& r, MetricsConfig* c) {
  r.Choice("enabled", {{"true", true}, {"false", false}}, &c->enabled);
  r.String("listen", &c->listen);
  r.Choice("namespace_labels", {{"true", true}, {"false", false}}, &c->namespace_labels);
  r.Int("max_namespaces", 1, 100000, &c->max_namespaces);
  r.RejectUnknown();
}

void ReadUcx(ConfigReader& r, UcxConfig* c) {
  r.Choice("enabled", {{"true", true}, {"false", false}}, &c->enabled);
  r.String("listen", &c->listen);
  r.String("tls", &c->tls);
  r.Size("rndv_thresh_bytes", 0, kGiB, &c->rndv_thresh_bytes);
  r.Size("tcp_segment_bytes", ucx_setup::kMinTcpSegmentBytes, ucx_setup::kMaxTcpSegmentBytes,
         &c->tcp_segment_bytes);
  r.Int("worker_threads", 1, 64, &c->worker_threads);
  r.Choice("direct_access", {{"true", true}, {"false", false}}, &c->direct_access);
  r.RejectUnknown();
}

// OK when `value` is HOST:PORT with a port in [0, 65535].
absl::Status CheckHostPort(absl::string_view field, const std::string& value) {
  const size_t colon = value.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(value).substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected HOST:PORT, got \"", value, "\""));
  }
  return absl::OkStatus();
}

void ReadStorage(ConfigReader& r, StorageConfig* c) {
  r.Size("max_chunk_bytes", 1, std::numeric_limits<uint64_t>::max(), &c->max_chunk_bytes);
  r.Int("max_lease_ms", 0, kDayMs, &c->max_lease_ms);
  r.Int("index_shards", 1, 65536, &c->index_shards);
  if (!IsPowerOfTwo(c->index_shards)) {
    r.Fail("index_shards", absl::StrCat("must be a power of two, got ", c->index_shards));
  }
  ConfigReader dram = r.Section("dram");
  DramConfig* d = &c->dram;
  dram.Size("capacity_bytes", 1, std::numeric_limits<uint64_t>::max(), &d->capacity_bytes);
  dram.Size("page_bytes", 4 * kKiB, kGiB, &d->page_bytes);
  if (!IsPowerOfTwo(d->page_bytes)) {
    dram.Fail("page_bytes", absl::StrCat("must be a power of two, got ", d->page_bytes));
  }
  // true/false are accepted because YAML users write them for on/off out of habit.
  dram.Choice("huge_pages",
              {{"off", HugePages::kOff},
               {"auto", HugePages::kAuto},
               {"on", HugePages::kOn},
               {"false", HugePages::kOff},
               {"true", HugePages::kOn}},
              &d->huge_pages);
  dram.Choice("prefault", {{"true", true}, {"false", false}}, &d->prefault);
  dram.Choice("eviction", {{"lru", std::string("lru")}}, &d->eviction);
  if (d->capacity_bytes < d->page_bytes) {
    dram.Fail("capacity_bytes", absl::StrCat("must be at least page_bytes (", d->page_bytes,
                                             "), got ", d->capacity_bytes));
  }
  dram.RejectUnknown();
  ConfigReader nvme = r.Section("nvme");
  ReadNvme(nvme, &c->nvme);
}

// Checks that relate several fields, or a field's syntax beyond its type.
absl::Status CheckCrossFields(const ServerConfig& c) {
  if (absl::Status s = CheckHostPort("metrics.listen", c.metrics.listen); !s.ok()) return s;
  if (absl::Status s = CheckHostPort("ucx.listen", c.ucx.listen); !s.ok()) return s;
  if (c.ucx.enabled && !c.ucx.tls.empty()) {
    absl::Status t = ucx_setup::CheckTransportNames(c.ucx.tls, ucx_setup::HostTransportNames());
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("ucx.tls: ", t.message()));
  }
  const GrpcConfig& s = c.server;
  if (!absl::StartsWith(s.grpc_listen, "unix:")) {
    size_t colon = s.grpc_listen.rfind(':');
    int port = -1;
    if (colon == std::string::npos || colon == 0 ||
        !absl::SimpleAtoi(absl::string_view(s.grpc_listen).substr(colon + 1), &port) || port < 0 ||
        port > 65535) {
      return absl::InvalidArgumentError(absl::StrCat(
          "server.grpc_listen: expected HOST:PORT or unix:PATH, got \"", s.grpc_listen, "\""));
    }
  }
  if (s.send_frame_bytes > s.max_frame_bytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "server.send_frame_bytes: must not exceed server.max_frame_bytes (",
        FormatByteSize(s.max_frame_bytes), "), got ", FormatByteSize(s.send_frame_bytes)));
  }
  // A request naming max_keys_per_request keys must still fit the message size limit.
  if (uint64_t{s.max_keys_per_request} * 16 > s.max_frame_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("server.max_keys_per_request: ", s.max_keys_per_request,
                     " keys of 16 bytes exceed server.max_frame_bytes (",
                     FormatByteSize(s.max_frame_bytes), ")"));
  }
  if (c.data_dir.empty()) return absl::InvalidArgumentError("data_dir: must not be empty");
  return absl::OkStatus();
}

absl::StatusOr<ServerConfig> ReadTree(const YAML::Node& root) {
  ServerConfig c;
  ConfigReader top(root, "");
  ConfigReader server = top.Section("server");
  ReadGrpc(server, &c.server);
  server.RejectUnknown();
  top.String("data_dir", &c.data_dir);
  ConfigReader log = top.Section("log");
  ReadLog(log, &c.log);
  log.RejectUnknown();
  ConfigReader storage = top.Section("storage");
  ReadStorage(storage, &c.storage);
  storage.RejectUnknown();
  ConfigReader metrics = top.Section("metrics");
  ReadMetrics(metrics, &c.metrics);
  ConfigReader ucx = top.Section("ucx");
  ReadUcx(ucx, &c.ucx);
  top.RejectUnknown();
  if (absl::Status s = top.status(); !s.ok()) return s;
  if (absl::Status s = CheckCrossFields(c); !s.ok()) return s;
  return c;
}

}  // namespace

storage::ChunkStoreOptions ServerConfig::ToChunkStoreOptions() const {
  storage::ChunkStoreOptions o;
  o.dram_capacity_bytes = storage.dram.capacity_bytes;
  o.page_bytes = storage.dram.page_bytes;
  o.huge_pages = storage.dram.huge_pages;
  o.max_chunk_bytes = storage.max_chunk_bytes;
  o.dram_eviction = storage.dram.eviction;
  o.prefault_dram = storage.dram.prefault;
  o.index_shards = storage.index_shards;
  o.max_lease = absl::Milliseconds(storage.max_lease_ms);
  const NvmeConfig& n = storage.nvme;
  o.nvme.path = NvmePath();
  o.nvme.capacity_bytes = n.capacity_bytes;
  o.nvme.demotion_threads = n.demotion_threads;
  o.nvme.read_threads = n.read_threads;
  o.nvme.demotion_queue_chunks = n.demotion_queue_chunks;
  o.nvme.demotion_wait_ms = n.demotion_wait_ms;
  o.nvme.clean_window_percent = n.clean_window_percent;
  o.nvme.flush_interval_ms = n.flush_interval_ms;
  o.nvme.write_through = n.write_through;
  o.nvme.sync_writes = n.sync_writes;
  o.nvme.promote_on_hit = n.promote_on_hit;
  o.nvme.low_priority_background = n.low_priority_background;
  return o;
}

std::string ServerConfig::NvmePath() const {
  if (!storage.nvme.enabled) return "";
  if (!storage.nvme.path.empty()) return storage.nvme.path;
  return absl::StrCat(data_dir, "/nvme");
}

absl::StatusOr<ServerConfig> ParseConfig(absl::string_view yaml,
                                         const std::vector<ConfigOverride>& overrides) {
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml));
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(
        absl::StrCat("line ", e.mark.line + 1, ", column ", e.mark.column + 1, ": ", e.msg));
  }
  if (!root.IsDefined() || root.IsNull()) root = YAML::Node(YAML::NodeType::Map);
  if (!root.IsMap()) {
    return absl::InvalidArgumentError("the top level of the config must be a mapping");
  }
  for (const ConfigOverride& o : overrides) {
    if (absl::Status s = ApplyOverride(o, &root); !s.ok()) return s;
  }
  try {
    return ReadTree(root);
  } catch (const YAML::Exception& e) {
    // The reader checks node kinds before converting, so this is a backstop only.
    return absl::InvalidArgumentError(absl::StrCat("malformed config: ", e.msg));
  }
}

absl::StatusOr<ServerConfig> LoadConfigFile(const std::string& path,
                                            const std::vector<ConfigOverride>& overrides) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open config file"));
  std::stringstream text;
  text << in.rdbuf();
  absl::StatusOr<ServerConfig> c = ParseConfig(text.str(), overrides);
  if (!c.ok()) {
    return absl::Status(c.status().code(), absl::StrCat(path, ": ", c.status().message()));
  }
  return c;
}

namespace {

void EmitNvme(const NvmeConfig& n, YAML::Emitter& out) {
  out << YAML::Key << "nvme" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << n.enabled;
  out << YAML::Key << "path" << YAML::Value << YAML::DoubleQuoted << n.path;
  out << YAML::Key << "capacity_bytes" << YAML::Value << FormatByteSize(n.capacity_bytes);
  out << YAML::Key << "demotion_threads" << YAML::Value << n.demotion_threads;
  out << YAML::Key << "read_threads" << YAML::Value << n.read_threads;
  out << YAML::Key << "demotion_queue_chunks" << YAML::Value << n.demotion_queue_chunks;
  out << YAML::Key << "demotion_wait_ms" << YAML::Value << n.demotion_wait_ms;
  out << YAML::Key << "clean_window_percent" << YAML::Value << n.clean_window_percent;
  out << YAML::Key << "flush_interval_ms" << YAML::Value << n.flush_interval_ms;
  out << YAML::Key << "write_through" << YAML::Value << n.write_through;
  out << YAML::Key << "sync_writes" << YAML::Value << n.sync_writes;
  out << YAML::Key << "promote_on_hit" << YAML::Value << n.promote_on_hit;
  out << YAML::Key << "low_priority_background" << YAML::Value << n.low_priority_background;
  out << YAML::EndMap;
}

void EmitMetrics(const MetricsConfig& m, YAML::Emitter& out) {
  out << YAML::Key << "metrics" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << m.enabled;
  out << YAML::Key << "listen" << YAML::Value << YAML::DoubleQuoted << m.listen;
  out << YAML::Key << "namespace_labels" << YAML::Value << m.namespace_labels;
  out << YAML::Key << "max_namespaces" << YAML::Value << m.max_namespaces;
  out << YAML::EndMap;
}

void EmitUcx(const UcxConfig& u, YAML::Emitter& out) {
  out << YAML::Key << "ucx" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "enabled" << YAML::Value << u.enabled;
  out << YAML::Key << "listen" << YAML::Value << YAML::DoubleQuoted << u.listen;
  out << YAML::Key << "tls" << YAML::Value << YAML::DoubleQuoted << u.tls;
  out << YAML::Key << "rndv_thresh_bytes" << YAML::Value << FormatByteSize(u.rndv_thresh_bytes);
  out << YAML::Key << "tcp_segment_bytes" << YAML::Value << FormatByteSize(u.tcp_segment_bytes);
  out << YAML::Key << "worker_threads" << YAML::Value << u.worker_threads;
  out << YAML::Key << "direct_access" << YAML::Value << u.direct_access;
  out << YAML::EndMap;
}

}  // namespace

std::string EmitConfig(const ServerConfig& c) {
  YAML::Emitter out;
  out << YAML::BeginMap;
  out << YAML::Key << "server" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "grpc_listen" << YAML::Value << YAML::DoubleQuoted << c.server.grpc_listen;
  out << YAML::Key << "max_frame_bytes" << YAML::Value << FormatByteSize(c.server.max_frame_bytes);
  out << YAML::Key << "send_frame_bytes" << YAML::Value
      << FormatByteSize(c.server.send_frame_bytes);
  out << YAML::Key << "max_keys_per_request" << YAML::Value << c.server.max_keys_per_request;
  out << YAML::Key << "shutdown_grace_ms" << YAML::Value << c.server.shutdown_grace_ms;
  out << YAML::EndMap;
  out << YAML::Key << "data_dir" << YAML::Value << YAML::DoubleQuoted << c.data_dir;
  out << YAML::Key << "log" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "level" << YAML::Value << std::string(LogLevelName(c.log.level));
  out << YAML::Key << "format" << YAML::Value << std::string(LogFormatName(c.log.format));
  out << YAML::EndMap;
  out << YAML::Key << "storage" << YAML::Value << YAML::BeginMap;
  out << YAML::Key << "max_chunk_bytes" << YAML::Value << FormatByteSize(c.storage.max_chunk_bytes);
  out << YAML::Key << "max_lease_ms" << YAML::Value << c.storage.max_lease_ms;
  out << YAML::Key << "index_shards" << YAML::Value << c.storage.index_shards;
  out << YAML::Key << "dram" << YAML::Value << YAML::BeginMap;
  const DramConfig& d = c.storage.dram;
  out << YAML::Key << "capacity_bytes" << YAML::Value << FormatByteSize(d.capacity_bytes);
  out << YAML::Key << "page_bytes" << YAML::Value << FormatByteSize(d.page_bytes);
  out << YAML::Key << "huge_pages" << YAML::Value << std::string(HugePagesName(d.huge_pages));
  out << YAML::Key << "prefault" << YAML::Value << d.prefault;
  out << YAML::Key << "eviction" << YAML::Value << d.eviction;
  out << YAML::EndMap;
  EmitNvme(c.storage.nvme, out);
  out << YAML::EndMap;
  EmitMetrics(c.metrics, out);
  EmitUcx(c.ucx, out);
  out << YAML::EndMap;
  return std::string(out.c_str()) + "\n";
}



absl::string_view LogLevelName(LogLevel level) {
  switch (level) {
    case LogLevel::kDebug:
      return "debug";
    case LogLevel::kInfo:
      return "info";
    case LogLevel::kWarn:
      return "warn";
    case LogLevel::kError:
      return "error";
  }
  return "info";
}

absl::string_view HugePagesName(storage::ChunkStoreOptions::HugePages mode) {
  switch (mode) {
    case HugePages::kOff:
      return "off";
    case HugePages::kAuto:
      return "auto";
    case HugePages::kOn:
      return "on";
  }
  return "auto";
}

absl::string_view LogFormatName(LogFormat format) {
  return format == LogFormat::kJson ? "json" : "logfmt";
}

}  // namespace kvstash::server
