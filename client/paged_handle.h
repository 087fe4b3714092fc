// The state shared by a running paged operation and its PagedHandle.
//
// Thread-safety: OpState is thread-safe: the operation's thread reports into it, handle
// calls on any thread wait on it.
#pragma once

#include <functional>
#include <memory>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "client/paged_backend.h"
#include "kvstash/paged.h"

namespace kvstash::internal {

class OpState {
 public:
  // Every copy is enqueued: `all` follows them, `layers[l]` follows layer l's (layer-wise
  // gets). Null fences mean the copies already ran (CPU) or were waited for.
  void CopiesEnqueued(Fence all, std::vector<Fence> layers);
  // The operation ended; also releases waiters of CopiesEnqueued when it failed early.
  void Done(absl::StatusOr<PagedResult> result);

  // Blocks until CopiesEnqueued or Done; false when the operation failed before its
  // copies were enqueued.
  bool AwaitEnqueued(Fence* all, std::vector<Fence>* layers);
  absl::StatusOr<PagedResult> AwaitResult();

 private:
  absl::Mutex mu_;
  bool enqueued_ ABSL_GUARDED_BY(mu_) = false;
  bool done_ ABSL_GUARDED_BY(mu_) = false;
  Fence all_ ABSL_GUARDED_BY(mu_);
  std::vector<Fence> layers_ ABSL_GUARDED_BY(mu_);
  absl::StatusOr<PagedResult> result_ ABSL_GUARDED_BY(mu_) = absl::UnknownError("running");
};

// Makes `stream` wait for a fence (the backend's StreamWait).
using StreamWaitFn = std::function<absl::Status(const Fence&, void* stream)>;

PagedHandlePtr MakePagedHandle(std::shared_ptr<OpState> state, StreamWaitFn stream_wait);

}  // namespace kvstash::internal
