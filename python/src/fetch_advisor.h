// kvstash._native.FetchAdvisor: kvstash::FetchAdvisor (kvstash/fetch_advisor.h) for Python,
// wrapped with typed tiers by kvstash._fetch.FetchAdvisor.
//
// Thread-safety: as the C++ class, thread-safe.
#pragma once

#include "nanobind/nanobind.h"

namespace kvstash::python {

void BindFetchAdvisor(nanobind::module_& m);

}  // namespace kvstash::python
