// The cluster part of the Python bindings: Client::Cluster() as a dict for
// kvstash.ClusterStatus (the cluster options are py_options.h's).
//
// Thread-safety: pure functions; REQUIRES the GIL held.
#pragma once

#include "kvstash/client.h"
#include "nanobind/nanobind.h"

namespace kvstash::python {

// {"members": [{field: value} per member], other ClusterStatus fields by name}.
nanobind::dict ClusterStatusDict(const ClusterStatus& status);

}  // namespace kvstash::python
