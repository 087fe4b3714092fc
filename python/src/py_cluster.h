// The cluster parts of the Python bindings: ClientOptions::cluster as the `cluster` dict
// among kvstash.Client's options (kvstash.ClusterOptions in Python), and Client::Cluster()
// as a dict for kvstash.ClusterStatus.
//
// Thread-safety: pure functions; REQUIRES the GIL held.
#pragma once

#include "kvstash/client.h"
#include "nanobind/nanobind.h"

namespace kvstash::python {

// Sets `options` from a dict of ClusterOptions fields by name; INVALID_ARGUMENT
// (StatusError) for an unknown name or a value of the wrong type.
void ParseClusterOptions(nanobind::handle dict, ClusterOptions* options);
// Every ClusterOptions field with its default.
nanobind::dict ClusterOptionDefaults();
// {"members": [{field: value} per member], other ClusterStatus fields by name}.
nanobind::dict ClusterStatusDict(const ClusterStatus& status);

}  // namespace kvstash::python
