#include "py_cluster.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "errors.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

// One field of struct T by name: read as a Python object, and (options only) set from one.
template <typename T>
struct Field {
  const char* name;
  nb::object (*get)(const T&);
  void (*set)(T&, nb::handle);
};

#define KVSTASH_FIELD(T, f)                                                                       \
  Field<T> {                                                                                      \
#f, [](const T& o) { return nb::cast(o.f); }, [](T & o,                                       \
                                                     nb::handle                                   \
                                                         v) { o.f = nb::cast<decltype(o.f)>(v); } \
  }

const Field<ClusterOptions> kOptionFields[] = {
    KVSTASH_FIELD(ClusterOptions, transport),
    KVSTASH_FIELD(ClusterOptions, replicas),
    KVSTASH_FIELD(ClusterOptions, hot_fetches),
    KVSTASH_FIELD(ClusterOptions, node_deadline_ms),
    KVSTASH_FIELD(ClusterOptions, breaker_failures),
    KVSTASH_FIELD(ClusterOptions, breaker_open_ms),
    KVSTASH_FIELD(ClusterOptions, handover_ms),
    KVSTASH_FIELD(ClusterOptions, dns_refresh_ms),
    KVSTASH_FIELD(ClusterOptions, etcd_ca_file),
    KVSTASH_FIELD(ClusterOptions, etcd_cert_file),
    KVSTASH_FIELD(ClusterOptions, etcd_key_file),
};

const Field<ClusterMemberStatus> kMemberFields[] = {
    KVSTASH_FIELD(ClusterMemberStatus, id),
    KVSTASH_FIELD(ClusterMemberStatus, address),
    KVSTASH_FIELD(ClusterMemberStatus, zone),
    KVSTASH_FIELD(ClusterMemberStatus, dram_capacity_bytes),
    KVSTASH_FIELD(ClusterMemberStatus, nvme_capacity_bytes),
    KVSTASH_FIELD(ClusterMemberStatus, connected),
    KVSTASH_FIELD(ClusterMemberStatus, breaker_open),
    KVSTASH_FIELD(ClusterMemberStatus, calls),
    KVSTASH_FIELD(ClusterMemberStatus, call_errors),
};

const Field<ClusterStatus> kStatusFields[] = {
    KVSTASH_FIELD(ClusterStatus, member_set_changes),
    KVSTASH_FIELD(ClusterStatus, keys_moved),
    KVSTASH_FIELD(ClusterStatus, source_connected),
};

#undef KVSTASH_FIELD

const Field<ClusterOptions>* OptionNamed(const std::string& name) {
  for (const Field<ClusterOptions>& f : kOptionFields) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

}  // namespace

void ParseClusterOptions(nb::handle dict, ClusterOptions* options) {
  if (!nb::isinstance<nb::dict>(dict)) {
    ThrowInvalid(absl::StrCat("client option cluster: expected a kvstash.ClusterOptions, got ",
                              nb::type_name(dict.type()).c_str()));
  }
  for (auto [key, value] : nb::borrow<nb::dict>(dict)) {
    const std::string name = nb::cast<std::string>(key);
    const Field<ClusterOptions>* field = OptionNamed(name);
    if (field == nullptr) {
      std::string known;
      for (const Field<ClusterOptions>& f : kOptionFields) {
        absl::StrAppend(&known, known.empty() ? "" : ", ", f.name);
      }
      ThrowInvalid(absl::StrCat("unknown cluster option '", name, "' (known: ", known, ")"));
    }
    const nb::object current = field->get(*options);
    // bool is an int in Python: keep flags and numbers apart.
    if (PyBool_Check(value.ptr()) != PyBool_Check(current.ptr())) {
      ThrowInvalid(absl::StrCat("cluster option ", name, ": expected ",
                                nb::type_name(current.type()).c_str(), ", got ",
                                nb::type_name(value.type()).c_str()));
    }
    try {
      field->set(*options, value);
    } catch (const nb::cast_error&) {
      ThrowInvalid(absl::StrCat("cluster option ", name, ": expected ",
                                nb::type_name(current.type()).c_str(), ", got ",
                                nb::repr(value).c_str()));
    }
  }
}

nb::dict ClusterOptionDefaults() {
  const ClusterOptions defaults;
  nb::dict out;
  for (const Field<ClusterOptions>& f : kOptionFields) out[f.name] = f.get(defaults);
  return out;
}

nb::dict ClusterStatusDict(const ClusterStatus& status) {
  nb::dict out;
  for (const Field<ClusterStatus>& f : kStatusFields) out[f.name] = f.get(status);
  nb::list members;
  for (const ClusterMemberStatus& m : status.members) {
    nb::dict member;
    for (const Field<ClusterMemberStatus>& f : kMemberFields) member[f.name] = f.get(m);
    members.append(member);
  }
  out["members"] = members;
  return out;
}

}  // namespace kvstash::python
