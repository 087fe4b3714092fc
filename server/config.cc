// ServerConfig's own rules, conversions and value names; reading and checking a config
// file through the schema live in config_parse.cc.
#include "server/config.h"

#include <arpa/inet.h>
#include <netinet/in.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/strip.h"
#include "cluster/etcd_client.h"
#include "server/config_choices.h"

namespace kvstash::server {

bool IsLoopbackHostPort(absl::string_view host_port) {
  absl::string_view host = host_port.substr(0, host_port.rfind(':'));
  host = absl::StripSuffix(absl::StripPrefix(host, "["), "]");
  if (host == "localhost") return true;
  // An address, not a name that merely starts like one ("127.example.com").
  const std::string h(host);
  in_addr v4;
  if (inet_pton(AF_INET, h.c_str(), &v4) == 1) return (ntohl(v4.s_addr) >> 24) == 127;
  in6_addr v6;
  return inet_pton(AF_INET6, h.c_str(), &v6) == 1 && IN6_IS_ADDR_LOOPBACK(&v6);
}

absl::Status CheckUcxTrust(const UcxConfig& ucx, bool auth_required) {
  if (!auth_required || !ucx.enabled || ucx.trusted_network || IsLoopbackHostPort(ucx.listen)) {
    return absl::OkStatus();
  }
  return absl::FailedPreconditionError(absl::StrCat(
      "ucx.listen: \"", ucx.listen,
      "\" is not a loopback address, and UCX has no TLS (tokens and chunks would cross the "
      "network unencrypted); set ucx.trusted_network: true if only trusted hosts reach this "
      "network, listen on loopback, or set ucx.enabled: false"));
}

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
  o.nvme = storage.nvme;  // the storage fields of NvmeConfig
  o.nvme.path = NvmePath();
  o.sessions = storage.sessions;
  o.tenants = storage.tenants;
  return o;
}

std::string ServerConfig::NvmePath() const {
  if (!storage.nvme.enabled) return "";
  if (!storage.nvme.path.empty()) return storage.nvme.path;
  return absl::StrCat(data_dir, "/nvme");
}

absl::Status InField(absl::string_view field, const absl::Status& s) {
  if (s.ok()) return s;
  return absl::InvalidArgumentError(absl::StrCat(field, ": ", s.message()));
}

absl::string_view HugePagesName(storage::ChunkStoreOptions::HugePages mode) {
  return ChoiceName(mode, Choices<storage::HugePages>(kHugePagesModes));
}

absl::StatusOr<cluster::EtcdOptions> ClusterConfig::Etcd() const {
  TlsChannelFiles files;
  files.ca = {etcd_ca_file, "cluster.etcd_ca_file"};
  files.cert = {etcd_cert_file, "cluster.etcd_cert_file"};
  files.key = {etcd_key_file, "cluster.etcd_key_file"};
  absl::StatusOr<cluster::EtcdOptions> etcd = cluster::EtcdOptionsFrom(etcd_endpoints, files);
  if (!etcd.ok()) return InField("cluster.etcd_endpoints", etcd.status());
  return etcd;
}

}  // namespace kvstash::server
