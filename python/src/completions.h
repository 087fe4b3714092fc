// Where asynchronous calls land: finished Ops queued with their tokens, and an eventfd
// that is readable while the queue may be non-empty, so Python waits without polling
// (select/poll/asyncio on fileno(), or wait()).
//
// Thread-safety: thread-safe. Push is called from the client's async threads.
#pragma once

#include <cstdint>
#include <deque>
#include <utility>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "ops.h"

namespace kvstash::python {

class CompletionQueue {
 public:
  using Entry = std::pair<uint64_t, OpPtr>;

  // Throws StatusError when no eventfd can be made.
  CompletionQueue();
  ~CompletionQueue();
  CompletionQueue(const CompletionQueue&) = delete;
  CompletionQueue& operator=(const CompletionQueue&) = delete;

  int fd() const { return fd_; }
  // Queues a finished op and makes fd() readable.
  void Push(uint64_t token, OpPtr op);
  // Takes every queued op; fd() stays readable only if more arrived meanwhile.
  std::vector<Entry> TakeAll();
  // Blocks until fd() is readable or timeout_ms passed (< 0: no limit). True if readable.
  bool Wait(int timeout_ms) const;

 private:
  const int fd_;
  absl::Mutex mu_;
  std::deque<Entry> done_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::python
