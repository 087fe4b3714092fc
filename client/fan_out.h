// FanOut: runs one call per member at once, the first on the calling thread and the others
// on threads of their own (std::async), and waits for all. Threads of their own, not the
// async executor: a fan-out inside an async call must never wait on its own pool.
//
// Thread-safety: a function of its arguments; `fn` must be safe to call concurrently.
#pragma once

#include <cstddef>
#include <future>
#include <vector>

namespace kvstash::client_internal {

template <typename Fn>
void FanOut(size_t n, Fn&& fn) {
  std::vector<std::future<void>> others;
  others.reserve(n > 0 ? n - 1 : 0);
  for (size_t i = 1; i < n; ++i) {
    others.push_back(std::async(std::launch::async, [&fn, i] { fn(i); }));
  }
  if (n > 0) fn(0);
  for (std::future<void>& f : others) f.wait();
}

}  // namespace kvstash::client_internal
