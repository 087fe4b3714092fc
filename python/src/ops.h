// One client call as an object: arguments borrowed from Python when it is made (GIL held),
// Run on any thread without the GIL, then Result back under the GIL. The synchronous
// methods run it in place; the *_async ones on the client's async threads, handing it to a
// CompletionQueue when done.
//
// Thread-safety: an Op is used by one thread at a time (its maker, then the runner, then
// whoever takes its result).
#pragma once

#include <cstdint>
#include <memory>

#include "kvstash/client.h"
#include "nanobind/nanobind.h"

namespace kvstash::python {

class Op {
 public:
  virtual ~Op() = default;
  // Performs the call. Called once, without the GIL.
  virtual void Run(Client& client) = 0;
  // The call's Python value; throws StatusError when it failed. REQUIRES: the GIL, after Run.
  virtual nanobind::object Result() = 0;
};
using OpPtr = std::shared_ptr<Op>;

// Each throws StatusError (INVALID_ARGUMENT) for malformed keys or buffers, or when
// `keys` and `buffers` differ in length. REQUIRES: the GIL.
//
// put -> list[bool]: True when stored or already present, False when the daemon declined
//   the chunk for space (RESOURCE_EXHAUSTED); any other per-chunk failure raises.
//   Every chunk carries `hints`; with `chain`, each chunk after the first names the key
//   before it as its parent (the first keeps hints.parent).
OpPtr MakePutOp(NamespaceHandle ns, nanobind::handle keys, nanobind::handle buffers,
                uint32_t tokens, uint32_t format, const PutHints& hints, bool chain);
// get_into -> list[int | None]: bytes written into each buffer, None for a miss; a buffer
//   smaller than its chunk raises INVALID_ARGUMENT, as does any other per-chunk failure.
OpPtr MakeGetOp(NamespaceHandle ns, nanobind::handle keys, nanobind::handle buffers,
                uint64_t lease_id);
// lookup -> kvstash.LookupResult.
OpPtr MakeLookupOp(NamespaceHandle ns, nanobind::handle keys, uint32_t lease_ms,
                   uint64_t session_id);
// exists -> list[kvstash.Tier], Tier.NONE for absent keys.
OpPtr MakeExistsOp(NamespaceHandle ns, nanobind::handle keys);
// delete -> int, the number of keys deleted.
OpPtr MakeDeleteOp(NamespaceHandle ns, nanobind::handle keys);

}  // namespace kvstash::python
