// Reading a config file through the schema (config_schema.h): overrides, strict parsing
// and the cross-field checks.
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <limits>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/etcd_client.h"
#include "cluster/member.h"
#include "common/bits.h"
#include "common/byte_size.h"
#include "common/ucx_setup.h"
#include "common/unix_socket.h"
#include "proto/ucx_wire.h"
#include "server/config_file.h"
#include "server/config_reader.h"
#include "server/config_schema.h"
#include "storage/tenant_quota_config.h"

namespace kvstash::server {

namespace {

using HugePages = storage::ChunkStoreOptions::HugePages;

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

// Reads each field from the YAML tree through a ConfigReader per section.
class ReadVisitor {
 public:
  explicit ReadVisitor(const YAML::Node& root) { readers_.emplace_back(root, ""); }

  void Begin(const char* section, const char* /*doc*/) {
    readers_.push_back(readers_.back().Section(section));
  }
  void End() {
    readers_.back().RejectUnknown();
    readers_.pop_back();
  }
  void String(const char* key, std::string* field, const char* /*doc*/) {
    readers_.back().String(key, field);
  }
  void Size(const char* key, uint64_t* field, SizeRange range, const char* /*doc*/) {
    readers_.back().Size(key, range.min, range.max, field);
    if (range.power_of_two) CheckPowerOfTwo(key, *field);
  }
  template <typename T>
  void Int(const char* key, T* field, IntRange range, const char* /*doc*/) {
    readers_.back().Int(key, range.min, range.max, field);
    if (range.power_of_two) CheckPowerOfTwo(key, static_cast<uint64_t>(*field));
  }
  void Bool(const char* key, bool* field, const char* /*doc*/) {
    readers_.back().Choice(key, {{"true", true}, {"false", false}}, field);
  }
  template <typename T>
  void Enum(const char* key, T* field, Choices<T> choices, const char* /*doc*/) {
    readers_.back().Choice(key, choices, field);
  }

  // Refuses unknown top-level keys; the first failure of any field.
  absl::Status Finish() {
    readers_.back().RejectUnknown();
    return readers_.back().status();
  }

 private:
  void CheckPowerOfTwo(const char* key, uint64_t value) {
    if (!IsPowerOfTwo(value)) {
      readers_.back().Fail(key, absl::StrCat("must be a power of two, got ", value));
    }
  }

  std::vector<ConfigReader> readers_;  // the sections open, innermost last
};

// OK when `value` is HOST:PORT with a port in [0, 65535]; `expected` names the accepted
// forms in the error.
absl::Status CheckHostPort(absl::string_view field, const std::string& value,
                           absl::string_view expected = "HOST:PORT") {
  const size_t colon = value.rfind(':');
  int port = -1;
  if (colon == std::string::npos || colon == 0 ||
      !absl::SimpleAtoi(absl::string_view(value).substr(colon + 1), &port) || port < 0 ||
      port > 65535) {
    return absl::InvalidArgumentError(
        absl::StrCat(field, ": expected ", expected, ", got \"", value, "\""));
  }
  return absl::OkStatus();
}

absl::Status CheckTls(const TlsConfig& t) {
  if (t.cert_file.empty() != t.key_file.empty()) {
    return absl::InvalidArgumentError(
        t.cert_file.empty() ? "server.tls.key_file: set without server.tls.cert_file"
                            : "server.tls.cert_file: set without server.tls.key_file");
  }
  if (!t.client_ca_file.empty() && t.cert_file.empty()) {
    return absl::InvalidArgumentError(
        "server.tls.client_ca_file: mutual TLS needs server.tls.cert_file and key_file");
  }
  return absl::OkStatus();
}

// Prefixes a cluster:: validation error with the field it came from.
absl::Status CheckCluster(const ClusterConfig& c) {
  if (absl::Status s = InField("cluster.name", cluster::ValidateClusterName(c.name)); !s.ok()) {
    return s;
  }
  if (!c.member_id.empty()) {
    absl::Status s = InField("cluster.member_id", cluster::ValidateMemberId(c.member_id));
    if (!s.ok()) return s;
  }
  if (!c.etcd_endpoints.empty()) {
    if (absl::Status s = c.Etcd().status(); !s.ok()) return s;
  } else if (c.enabled) {
    return absl::InvalidArgumentError(
        "cluster.etcd_endpoints: must be set (\"host:port,...\") when cluster.enabled is true");
  }
  if (!c.advertise_grpc.empty()) {
    if (absl::Status s = CheckHostPort("cluster.advertise_grpc", c.advertise_grpc); !s.ok()) {
      return s;
    }
  }
  if (c.advertise_ucx.empty()) return absl::OkStatus();
  return CheckHostPort("cluster.advertise_ucx", c.advertise_ucx);
}

// Checks that relate several fields, or a field's syntax beyond its type.
absl::Status CheckCrossFields(const ServerConfig& c) {
  if (absl::Status s = CheckCluster(c.cluster); !s.ok()) return s;
  if (absl::Status s = CheckHostPort("metrics.listen", c.metrics.listen); !s.ok()) return s;
  if (absl::Status s = CheckHostPort("ucx.listen", c.ucx.listen); !s.ok()) return s;
  if (c.ucx.enabled && !c.ucx.tls.empty()) {
    absl::Status t = ucx_setup::CheckTransportNames(c.ucx.tls, ucx_setup::HostTransportNames());
    if (!t.ok()) return absl::InvalidArgumentError(absl::StrCat("ucx.tls: ", t.message()));
  }
  const GrpcConfig& s = c.server;
  if (!absl::StartsWith(s.grpc_listen, "unix:")) {
    absl::Status l = CheckHostPort("server.grpc_listen", s.grpc_listen, "HOST:PORT or unix:PATH");
    if (!l.ok()) return l;
  }
  if (!s.local_socket.empty()) {
    absl::Status p = CheckSocketPath(s.local_socket);
    // The local arena socket lies beside it, under a longer name.
    if (p.ok()) p = CheckSocketPath(ArenaSocketPath(s.local_socket));
    if (!p.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("server.local_socket: ", p.message()));
    }
    if (s.grpc_listen == absl::StrCat("unix:", s.local_socket)) {
      return absl::InvalidArgumentError(
          "server.local_socket: names the socket server.grpc_listen already serves");
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
  const DramConfig& d = c.storage.dram;
  if (d.capacity_bytes < d.page_bytes) {
    return absl::InvalidArgumentError(
        absl::StrCat("storage.dram.capacity_bytes: must be at least page_bytes (", d.page_bytes,
                     "), got ", d.capacity_bytes));
  }
  if (absl::Status t = storage::ParseTenantQuotas(c.storage.tenants).status(); !t.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("storage.", t.message()));
  }
  if (c.data_dir.empty()) return absl::InvalidArgumentError("data_dir: must not be empty");
  if (absl::Status u = CheckUcxTrust(c.ucx, c.auth.required); !u.ok()) return u;
  if (!c.cluster.peer_ca_file.empty() && !c.server.tls.enabled()) {
    return absl::InvalidArgumentError(
        "cluster.peer_ca_file: peers are probed over TLS only with server.tls.cert_file set");
  }
  return CheckTls(c.server.tls);
}

absl::StatusOr<ServerConfig> ReadTree(const YAML::Node& root) {
  ServerConfig c;
  ReadVisitor reader(root);
  VisitConfig(c, reader);
  if (absl::Status s = reader.Finish(); !s.ok()) return s;
  if (absl::Status s = CheckCrossFields(c); !s.ok()) return s;
  return c;
}

}  // namespace

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

}  // namespace kvstash::server
