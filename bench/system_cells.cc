#include "bench/system_cells.h"

#include <functional>
#include <utility>

#include "absl/strings/str_cat.h"
#include "bench/process.h"

namespace kvstash::bench {
namespace {

// Stores the get working set of one size (already-present keys cost a round trip only).
absl::Status StoreWorkingSet(Conn& conn, const std::vector<BenchKey>& keys,
                             absl::Span<const char> value) {
  for (const BenchKey& key : keys) {
    if (absl::Status s = conn.Put(key, value); !s.ok() && !absl::IsAlreadyExists(s)) return s;
  }
  return absl::OkStatus();
}

}  // namespace

void RunSystemCells(System& system, const CellSpec& cell, const CellLimits& limits, ConnPool* pool,
                    std::vector<Sample>* out, std::vector<std::string>* notes) {
  absl::StatusOr<std::vector<Conn*>> conns = pool->Get(system, cell.clients);
  if (!conns.ok()) {
    notes->push_back(absl::StrCat(system.name(), ": ", conns.status().ToString()));
    return;
  }
  if (absl::Status s = StoreWorkingSet(*(*conns)[0], *cell.working_set, cell.value); !s.ok()) {
    notes->push_back(absl::StrCat(system.name(), " working set: ", s.ToString()));
    return;
  }
  const std::vector<BenchKey>& ws = *cell.working_set;
  for (Op op : {Op::kGet, Op::kPut}) {
    OpPlan plan;
    plan.op = op;
    plan.chunk_bytes = cell.size;
    plan.put_value = cell.value;
    const uint64_t space = cell.put_space;
    plan.key = op == Op::kGet ? std::function<BenchKey(int, uint64_t)>([&ws](int t, uint64_t i) {
      return ws[(t * 7 + i) % ws.size()];
    })
                              : [space](int t, uint64_t i) {
                                  return MakeKey(space, (uint64_t{1} << 40) * t + i);
                                };
    Sample sample{system.name(), system.transport(), op, cell.size, cell.clients, 0, {}};
    SettleServers(*cell.servers, "a cell", notes);
    sample.result = RunCell(*conns, plan, limits);
    out->push_back(std::move(sample));
  }
}

}  // namespace kvstash::bench
