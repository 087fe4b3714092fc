// Bindings of kvstash::Client (kvstash._native.Client) and of CompletionQueue
// (kvstash._native.Completions). kvstash/_client.py builds the public Client on them.
//
// Thread-safety: both are thread-safe; every blocking call releases the GIL.
#pragma once

#include "nanobind/nanobind.h"

namespace kvstash::python {

void BindClient(nanobind::module_& m);

}  // namespace kvstash::python
