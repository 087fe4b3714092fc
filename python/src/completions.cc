#include "completions.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "errors.h"

namespace kvstash::python {
namespace {

int MakeEventFd() {
  int fd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (fd < 0) {
    throw StatusError(absl::InternalError(absl::StrCat("eventfd: ", std::strerror(errno))));
  }
  return fd;
}

}  // namespace

CompletionQueue::CompletionQueue() : fd_(MakeEventFd()) {}

CompletionQueue::~CompletionQueue() { close(fd_); }

void CompletionQueue::Push(uint64_t token, OpPtr op) {
  {
    absl::MutexLock lock(&mu_);
    done_.emplace_back(token, std::move(op));
  }
  const uint64_t one = 1;
  // Cannot fail short of a counter overflow (2^64 - 1 pushes without a drain).
  [[maybe_unused]] ssize_t n = write(fd_, &one, sizeof(one));
}

std::vector<CompletionQueue::Entry> CompletionQueue::TakeAll() {
  // Reset the counter before taking, so a push racing with this leaves fd_ readable.
  uint64_t count = 0;
  [[maybe_unused]] ssize_t n = read(fd_, &count, sizeof(count));
  absl::MutexLock lock(&mu_);
  std::vector<Entry> out(std::make_move_iterator(done_.begin()),
                         std::make_move_iterator(done_.end()));
  done_.clear();
  return out;
}

bool CompletionQueue::Wait(int timeout_ms) const {
  pollfd p{fd_, POLLIN, 0};
  for (;;) {
    int r = poll(&p, 1, timeout_ms);
    if (r >= 0) return r > 0;
    if (errno != EINTR) return false;
  }
}

}  // namespace kvstash::python
