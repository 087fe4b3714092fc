// kvstash.Client's keyword arguments: ClientOptions from Python values and back, field by
// field through the client's option schema (kvstash/client_options_schema.h), so a new
// option needs nothing here. `cluster` is a dict of ClusterOptions fields (kvstash.
// ClusterOptions in Python).
//
// Thread-safety: pure functions; REQUIRES the GIL held.
#pragma once

#include "kvstash/client.h"
#include "nanobind/nanobind.h"

namespace kvstash::python {

// The options the keyword arguments name, the others at their defaults, validated.
// INVALID_ARGUMENT (StatusError) for an unknown name, a value of the wrong type, or one
// out of range.
ClientOptions OptionsFromKwargs(const nanobind::dict& kwargs);
// Every option with its default; "cluster" maps to a dict of ClusterOptions fields.
nanobind::dict DefaultOptions();

}  // namespace kvstash::python
