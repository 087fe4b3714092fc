#include "py_cluster.h"

#include <string>

#include "absl/strings/str_cat.h"
#include "errors.h"
#include "nanobind/stl/string.h"
#include "nanobind/stl/vector.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

// One field of struct T by name, read as a Python object.
template <typename T>
struct Field {
  const char* name;
  nb::object (*get)(const T&);
};

// clang-format off
#define KVSTASH_FIELD(T, f) {#f, [](const T& o) { return nb::cast(o.f); }}
// clang-format on

const Field<ClusterMemberStatus> kMemberFields[] = {
    KVSTASH_FIELD(ClusterMemberStatus, id),
    KVSTASH_FIELD(ClusterMemberStatus, address),
    KVSTASH_FIELD(ClusterMemberStatus, zone),
    {"capacity_bytes",
     [](const ClusterMemberStatus& o) {
       nb::dict by_tier;
       for (const TierCapacity& t : o.tiers)
         by_tier[nb::int_(static_cast<int>(t.tier))] = t.capacity_bytes;
       return nb::object(by_tier);
     }},
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

}  // namespace

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
