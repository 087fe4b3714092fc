// Runs the suite: per workload one trace, its engine-cache-only run, then every store at
// every capacity (and, for kvstash, every policy, hint set and advisor setting) on that same
// trace, each on
// a freshly started server so no run sees another's data.
//
// Thread-safety: runs on the calling (main) thread; servers are spawned from it.
#pragma once

#include <memory>
#include <ostream>

#include "absl/status/status.h"
#include "bench/process.h"
#include "bench/workload/options.h"
#include "bench/workload/report.h"
#include "kvstash/fetch_advisor.h"

namespace kvstash::bench::workload {

class SuiteRunner {
 public:
  SuiteRunner(const WorkloadOptions& options, Reporter* reporter, std::ostream& out)
      : o_(options), reporter_(reporter), out_(out) {}

  // Fails only when the scratch directory cannot be made or no workload could run; a store
  // that cannot start gives a row with its error and the suite goes on.
  absl::Status Run();

 private:
  struct Context;  // one workload's trace and sizes
  struct Variant {
    const StoreSpec* store;
    double capacity_fraction;
    std::string policy;
    HintOptions hints;
    bool advisor = false;  // kvstash: FetchAdvisor decides what to fetch
  };

  absl::Status RunWorkload(WorkloadKind kind);
  ResultRow RunVariant(const Context& c, const Variant& v);
  // The store of `v` started on a fresh server in `dir`, owning it.
  absl::StatusOr<std::unique_ptr<RemoteStore>> StartStore(const Context& c, const Variant& v,
                                                          const std::string& dir,
                                                          uint64_t capacity_bytes);
  absl::StatusOr<std::unique_ptr<RemoteStore>> StartKvstash(const Context& c, const Variant& v,
                                                            const std::string& dir,
                                                            uint64_t capacity_bytes);
  Namespace ModelNamespace() const;
  // A fresh advisor for one run: the cost model's prefill and the model's KV bytes.
  absl::StatusOr<std::unique_ptr<FetchAdvisor>> NewAdvisor() const;

  const WorkloadOptions& o_;
  Reporter* reporter_;
  std::ostream& out_;
  std::unique_ptr<ScratchDir> scratch_;
  int runs_ = 0;
};

}  // namespace kvstash::bench::workload
