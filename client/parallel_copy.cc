#include "client/parallel_copy.h"

#include <algorithm>
#include <cstring>
#include <vector>

#include "common/streaming_copy.h"

namespace kvstash::client_internal {

ParallelCopier::ParallelCopier(const Options& options) : options_(options) {}

ParallelCopier::~ParallelCopier() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  for (std::thread& t : helpers_) t.join();
}

namespace {

void CopyOne(void* dst, const void* src, size_t n, bool streaming) {
  if (streaming) {
    StreamingCopyUnfenced(dst, src, n);
  } else if (n > 0) {
    CopyBytes(dst, src, n);
  }
}

}  // namespace

void ParallelCopier::CopyAll(absl::Span<const Range> ranges, bool streaming) {
  size_t n = 0;
  for (const Range& r : ranges) n += r.n;
  if (options_.helpers == 0 || n < options_.min_bytes || !busy_.TryLock()) {
    for (const Range& r : ranges) CopyOne(r.dst, r.src, r.n, streaming);
    if (streaming) StreamingFence();
    return;
  }
  // Started on the first large copy: a client that never maps the daemon's arena (TCP,
  // another host) never has them.
  absl::call_once(started_, [this] {
    for (int i = 0; i < options_.helpers; ++i) helpers_.emplace_back([this] { HelperLoop(); });
  });
  std::vector<size_t> ends(ranges.size());
  size_t end = 0;
  for (size_t i = 0; i < ranges.size(); ++i) ends[i] = end += ranges[i].n;
  Job job{ranges, ends.data(), n, streaming};
  {
    absl::MutexLock lock(&mu_);
    job_ = &job;
    ++generation_;
  }
  RunPieces(job);
  {
    // From here on no helper can take the job; wait for those that did (each finishes at
    // most one piece now that none is left).
    absl::MutexLock lock(&mu_);
    job_ = nullptr;
  }
  while (job.helpers_in.load(std::memory_order_acquire) > 0) std::this_thread::yield();
  busy_.Unlock();
}

void ParallelCopier::RunPieces(Job& job) const {
  while (true) {
    const size_t at = job.next.fetch_add(options_.piece_bytes, std::memory_order_relaxed);
    if (at >= job.n) break;
    CopySpan(job, at, std::min(at + options_.piece_bytes, job.n));
  }
  // Non-temporal stores are ordered by this thread's own fence; the release/acquire pair
  // on helpers_in then makes a helper's bytes visible to the caller.
  if (job.streaming) StreamingFence();
}

void ParallelCopier::CopySpan(const Job& job, size_t at, size_t end) {
  const size_t* const last = job.ends + job.ranges.size();
  for (size_t i = std::upper_bound(job.ends, last, at) - job.ends; at < end; ++i) {
    const Range& r = job.ranges[i];
    const size_t offset = at - (job.ends[i] - r.n);
    const size_t len = std::min(job.ends[i], end) - at;
    CopyOne(static_cast<uint8_t*>(r.dst) + offset, static_cast<const uint8_t*>(r.src) + offset, len,
            job.streaming);
    at += len;
  }
}

void ParallelCopier::HelperLoop() {
  struct Wait {
    ParallelCopier* self;
    uint64_t seen;  // the generation of the last job this helper took (or missed)
  };
  Wait wait{this, 0};
  const auto ready = +[](Wait* w) ABSL_NO_THREAD_SAFETY_ANALYSIS {  // runs under mu_
    return w->self->stop_ || (w->self->job_ != nullptr && w->self->generation_ != w->seen);
  };
  while (true) {
    Job* job = nullptr;
    {
      absl::MutexLock lock(&mu_);
      mu_.Await(absl::Condition(ready, &wait));
      if (stop_) return;
      wait.seen = generation_;
      job = job_;
      job->helpers_in.fetch_add(1, std::memory_order_relaxed);
    }
    RunPieces(*job);
    job->helpers_in.fetch_sub(1, std::memory_order_release);  // the job may end right after
  }
}

}  // namespace kvstash::client_internal
