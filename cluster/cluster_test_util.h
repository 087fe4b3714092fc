// Helpers shared by the cluster tests: waiting for a condition, an endpoint nobody serves.
//
// Thread-safety: functions; DeadEndpoint is owned by one thread.
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <functional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kvstash::cluster::testing {

// Generous: conditions normally hold within a lease TTL or two; this only bounds a hang.
constexpr absl::Duration kWaitDeadline = absl::Seconds(60);

// Polls `condition` until it holds (true) or `deadline` passes (false).
inline bool WaitFor(const std::function<bool()>& condition,
                    absl::Duration deadline = kWaitDeadline) {
  const absl::Time until = absl::Now() + deadline;
  while (!condition()) {
    if (absl::Now() >= until) return false;
    absl::SleepFor(absl::Milliseconds(20));
  }
  return true;
}

// A loopback port held bound but never listened on, so connecting to it is refused at once
// and no other process can take it meanwhile.
class DeadEndpoint {
 public:
  DeadEndpoint() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in addr{};
    addr.sin_family = AF_INET;
    addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t len = sizeof(addr);
    if (fd_ >= 0 && bind(fd_, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0 &&
        getsockname(fd_, reinterpret_cast<sockaddr*>(&addr), &len) == 0) {
      endpoint_ = absl::StrCat("127.0.0.1:", ntohs(addr.sin_port));
    }
  }
  ~DeadEndpoint() {
    if (fd_ >= 0) close(fd_);
  }
  DeadEndpoint(const DeadEndpoint&) = delete;
  DeadEndpoint& operator=(const DeadEndpoint&) = delete;

  // "127.0.0.1:PORT"; empty when no port could be bound.
  const std::string& endpoint() const { return endpoint_; }

 private:
  int fd_ = -1;
  std::string endpoint_;
};

}  // namespace kvstash::cluster::testing
