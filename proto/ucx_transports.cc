#include "proto/ucx_transports.h"

#include <uct/api/uct.h>

#include <algorithm>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kvstash::wire::ucx {
namespace {

// UCX's aliases (ucp_context.c) and the transports each stands for.
struct Alias {
  const char* name;
  std::vector<const char*> members;
};

const std::vector<Alias>& Aliases() {
  static const std::vector<Alias> aliases = {
      {"sm", {"posix", "sysv", "xpmem", "knem", "cma"}},
      {"shm", {"posix", "sysv", "xpmem", "knem", "cma"}},
      {"mm", {"posix", "sysv", "xpmem"}},
      {"ib", {"rc_verbs", "ud_verbs", "rc_mlx5", "ud_mlx5", "dc_mlx5"}},
      {"rc", {"rc_verbs", "rc_mlx5"}},
      {"rc_v", {"rc_verbs"}},
      {"rc_x", {"rc_mlx5"}},
      {"ud", {"ud_verbs", "ud_mlx5"}},
      {"ud_v", {"ud_verbs"}},
      {"ud_x", {"ud_mlx5"}},
      {"dc", {"dc_mlx5"}},
      {"dc_x", {"dc_mlx5"}},
      {"cuda", {"cuda_copy", "cuda_ipc", "gdr_copy"}},
      {"rocm", {"rocm_copy", "rocm_ipc", "rocm_gdr"}},
      {"ugni", {"ugni_smsg", "ugni_udt", "ugni_rdma"}},
  };
  return aliases;
}

// Adds the transport names of every memory domain of `component` to `out`.
void AddComponentTransports(uct_component_h component, std::set<std::string>* out) {
  uct_component_attr_t attr{};
  attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
  if (uct_component_query(component, &attr) != UCS_OK || attr.md_resource_count == 0) return;
  std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
  attr.field_mask = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
  attr.md_resources = mds.data();
  if (uct_component_query(component, &attr) != UCS_OK) return;
  uct_md_config_t* config = nullptr;
  if (uct_md_config_read(component, nullptr, nullptr, &config) != UCS_OK) return;
  for (const uct_md_resource_desc_t& md_resource : mds) {
    uct_md_h md = nullptr;
    if (uct_md_open(component, md_resource.md_name, config, &md) != UCS_OK) continue;
    uct_tl_resource_desc_t* tls = nullptr;
    unsigned count = 0;
    if (uct_md_query_tl_resources(md, &tls, &count) == UCS_OK) {
      for (unsigned i = 0; i < count; ++i) out->insert(tls[i].tl_name);
      uct_release_tl_resource_list(tls);
    }
    uct_md_close(md);
  }
  uct_config_release(config);
}

std::vector<std::string> QueryHostTransportNames() {
  uct_component_h* components = nullptr;
  unsigned count = 0;
  if (uct_query_components(&components, &count) != UCS_OK) return {};
  std::set<std::string> names;
  for (unsigned i = 0; i < count; ++i) AddComponentTransports(components[i], &names);
  uct_release_component_list(components);
  if (names.empty()) return {};
  for (const Alias& alias : Aliases()) {
    for (const char* member : alias.members) {
      if (names.count(member) != 0) {
        names.insert(alias.name);
        break;
      }
    }
  }
  return std::vector<std::string>(names.begin(), names.end());
}

}  // namespace

const std::vector<std::string>& HostTransportNames() {
  static const std::vector<std::string>* const names =
      new std::vector<std::string>(QueryHostTransportNames());
  return *names;
}

absl::Status CheckTransportNames(const std::string& tls,
                                 const std::vector<std::string>& available) {
  if (tls.empty() || tls[0] == '^' || available.empty()) return absl::OkStatus();
  std::vector<std::string> missing;
  for (absl::string_view entry : absl::StrSplit(tls, ',', absl::SkipWhitespace())) {
    const absl::string_view name = entry.substr(0, entry.find(':'));
    if (name == "all") return absl::OkStatus();
    if (!std::binary_search(available.begin(), available.end(), name)) {
      missing.emplace_back(name);
    }
  }
  if (missing.empty()) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat(
      "\"", absl::StrJoin(missing, "\", \""),
      "\" not available on this host (available: ", absl::StrJoin(available, ", "), ")"));
}

}  // namespace kvstash::wire::ucx
