#include "common/ucx_setup.h"

#include <ucp/api/ucp.h>
#include <uct/api/uct.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <optional>
#include <set>

#include "absl/strings/ascii.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace kvstash::ucx_setup {
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

std::string WithConnectionTransport(const std::string& tls) {
  if (tls.empty() || tls[0] == '^') return tls;
  for (absl::string_view t : absl::StrSplit(tls, ',')) {
    if (t == "all" || t == "tcp" || t == "ib" || t == "rc" || t == "rc_x" || t == "rc_v" ||
        t == "dc" || t == "dc_x" || t == "ud" || t == "ud_x" || t == "ud_v") {
      return tls;
    }
  }
  return absl::StrCat(tls, ",tcp");
}

namespace {

// `tls`, or UCX_TLS from the environment when it is empty.
std::string EffectiveTls(const std::string& tls) {
  const char* env = getenv("UCX_TLS");
  return !tls.empty() ? tls : env != nullptr ? env : "";
}

// UCX's memory units: digits, then optionally K, M or G (either case), then optionally B.
std::optional<uint64_t> ParseMemoryUnits(absl::string_view v) {
  size_t digits = 0;
  while (digits < v.size() && absl::ascii_isdigit(v[digits])) ++digits;
  absl::string_view unit = v.substr(digits);
  if (!unit.empty() && (unit.back() == 'b' || unit.back() == 'B')) unit.remove_suffix(1);
  int shift = 0;
  if (unit.size() == 1) {
    const char u = absl::ascii_toupper(unit[0]);
    shift = u == 'K' ? 10 : u == 'M' ? 20 : u == 'G' ? 30 : -1;
  }
  uint64_t n = 0;
  if (digits == 0 || unit.size() > 1 || shift < 0 || !absl::SimpleAtoi(v.substr(0, digits), &n) ||
      n > (uint64_t{1} << 33)) {
    return std::nullopt;
  }
  return n << shift;
}

constexpr char kTcpSegmentKey[] = "TCP_RX_SEG_SIZE";
constexpr char kBareTcpSegmentKey[] = "RX_SEG_SIZE";

// Which of the two spellings the TCP transport of `tcp` (its UCT component) accepts.
const char* ProbeTcpSegmentKey(uct_component_h tcp) {
  uct_md_config_t* md_config = nullptr;
  if (uct_md_config_read(tcp, nullptr, nullptr, &md_config) != UCS_OK) return kTcpSegmentKey;
  uct_md_h md = nullptr;
  const ucs_status_t opened = uct_md_open(tcp, "tcp", md_config, &md);
  uct_config_release(md_config);
  if (opened != UCS_OK) return kTcpSegmentKey;
  const char* key = kTcpSegmentKey;
  uct_iface_config_t* iface = nullptr;
  if (uct_md_iface_config_read(md, "tcp", nullptr, nullptr, &iface) == UCS_OK) {
    if (uct_config_modify(iface, kTcpSegmentKey, "64K") != UCS_OK &&
        uct_config_modify(iface, kBareTcpSegmentKey, "64K") == UCS_OK) {
      key = kBareTcpSegmentKey;
    }
    uct_config_release(iface);
  }
  uct_md_close(md);
  return key;
}

// The name under which ucp_config_modify reaches the TCP transport's receive segment. UCP
// hands a key it does not know to each transport's configuration when the transport opens,
// and a key no transport takes is only warned about: the transport keeps its 64 KiB, and a
// peer sending larger fragments aborts the process (see ConfigureUcx). UCX up to 1.13 matches
// the key against the TCP table without its "TCP_" prefix, later releases with it, so the
// TCP transport is asked which one it takes (once per process).
const char* TcpSegmentKey() {
  static const char* const key = [] {
    uct_component_h* components = nullptr;
    unsigned count = 0;
    if (uct_query_components(&components, &count) != UCS_OK) return kTcpSegmentKey;
    const char* found = kTcpSegmentKey;
    for (unsigned i = 0; i < count; ++i) {
      uct_component_attr_t attr{};
      attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
      if (uct_component_query(components[i], &attr) == UCS_OK &&
          std::strcmp(attr.name, "tcp") == 0) {
        found = ProbeTcpSegmentKey(components[i]);
        break;
      }
    }
    uct_release_component_list(components);
    return found;
  }();
  return key;
}

}  // namespace

bool AllowsSharedMemory(const std::string& tls) {
  const std::string list = EffectiveTls(tls);
  if (list.empty()) return true;
  const bool exclude = list[0] == '^';
  bool sm = false, posix = false, sysv = false, all = false;
  for (absl::string_view t : absl::StrSplit(exclude ? list.substr(1) : list, ',')) {
    sm |= t == "sm" || t == "shm";
    posix |= t == "posix";
    sysv |= t == "sysv";
    all |= t == "all";
  }
  return exclude ? !(sm || (posix && sysv)) : (all || sm || posix || sysv);
}

absl::StatusOr<uint64_t> EffectiveTcpSegmentBytes(uint64_t configured) {
  const char* env = getenv("UCX_TCP_RX_SEG_SIZE");
  uint64_t bytes = configured;
  if (env != nullptr) {
    std::optional<uint64_t> parsed = ParseMemoryUnits(env);
    if (!parsed) {
      return absl::InvalidArgumentError(
          absl::StrCat("UCX_TCP_RX_SEG_SIZE=\"", env, "\" is not a size in bytes"));
    }
    bytes = *parsed;
  }
  if (bytes < kMinTcpSegmentBytes || bytes > kMaxTcpSegmentBytes) {
    return absl::InvalidArgumentError(absl::StrCat(
        "UCX TCP segment of ", bytes, " bytes", env != nullptr ? " (UCX_TCP_RX_SEG_SIZE)" : "",
        " is outside [", kMinTcpSegmentBytes, ", ", kMaxTcpSegmentBytes, "]"));
  }
  return bytes;
}

absl::StatusOr<uint64_t> ConfigureUcx(const std::string& tls, uint64_t tcp_segment_bytes,
                                      void* ucp_config) {
  absl::StatusOr<uint64_t> effective = EffectiveTcpSegmentBytes(tcp_segment_bytes);
  if (!effective.ok()) return effective.status();
  auto* config = static_cast<ucp_config_t*>(ucp_config);
  const std::string requested = EffectiveTls(tls);
  // Asking UCX for the host's transports opens every memory domain: only with a list.
  absl::Status names =
      requested.empty() ? absl::OkStatus() : CheckTransportNames(requested, HostTransportNames());
  if (!names.ok()) {
    return absl::InvalidArgumentError(absl::StrCat(tls.empty() ? "UCX_TLS" : "UCX transports",
                                                   " \"", requested, "\": ", names.message()));
  }
  const std::string all = WithConnectionTransport(requested);
  if (!all.empty()) {
    if (ucs_status_t s = ucp_config_modify(config, "TLS", all.c_str()); s != UCS_OK) {
      return absl::InvalidArgumentError(
          absl::StrCat("UCX transports \"", tls, "\": ", ucs_status_string(s)));
    }
  }
  // Only where shared memory may be used: a key no transport takes draws a UCX warning for
  // every worker.
  if (getenv("UCX_MM_ERROR_HANDLING") == nullptr && AllowsSharedMemory(tls)) {
    (void)ucp_config_modify(config, "MM_ERROR_HANDLING", "y");  // older UCX: no such option
  }
  const std::string segment = absl::StrCat(*effective);
  if (ucs_status_t s = ucp_config_modify(config, TcpSegmentKey(), segment.c_str()); s != UCS_OK) {
    return absl::InvalidArgumentError(
        absl::StrCat("UCX TCP segment of ", *effective, " bytes: ", ucs_status_string(s)));
  }
  return *effective;
}

absl::Status CreateWorker(ucp_context_h context, ucp_worker_h* worker, int* efd) {
  ucp_worker_params_t params{};
  params.field_mask = UCP_WORKER_PARAM_FIELD_THREAD_MODE;
  params.thread_mode = UCS_THREAD_MODE_SERIALIZED;
  ucs_status_t s = ucp_worker_create(context, &params, worker);
  if (s != UCS_OK) {
    return absl::UnavailableError(absl::StrCat("ucp_worker_create: ", ucs_status_string(s)));
  }
  if (s = ucp_worker_get_efd(*worker, efd); s != UCS_OK) {
    ucp_worker_destroy(*worker);
    *worker = nullptr;
    return absl::UnavailableError(absl::StrCat("ucp_worker_get_efd: ", ucs_status_string(s)));
  }
  return absl::OkStatus();
}

absl::Status SetWholeMessageHandler(ucp_worker_h worker, unsigned am_id, ucp_am_recv_callback_t cb,
                                    void* arg) {
  ucp_am_handler_param_t am{};
  am.field_mask = UCP_AM_HANDLER_PARAM_FIELD_ID | UCP_AM_HANDLER_PARAM_FIELD_CB |
                  UCP_AM_HANDLER_PARAM_FIELD_ARG | UCP_AM_HANDLER_PARAM_FIELD_FLAGS;
  am.id = am_id;
  am.cb = cb;
  am.arg = arg;
  am.flags = UCP_AM_FLAG_WHOLE_MSG;
  if (ucs_status_t s = ucp_worker_set_am_recv_handler(worker, &am); s != UCS_OK) {
    return absl::UnavailableError(
        absl::StrCat("ucp_worker_set_am_recv_handler: ", ucs_status_string(s)));
  }
  return absl::OkStatus();
}

}  // namespace kvstash::ucx_setup
