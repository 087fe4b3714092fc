#include "server/service_env.h"

#include <grpcpp/support/slice.h>

#include <cstring>
#include <string>

#include "absl/strings/str_cat.h"

namespace kvstash::server {

absl::Status ServiceEnv::Admit() const {
  if (draining.load(std::memory_order_relaxed)) {
    return absl::UnavailableError("kvstashd is shutting down");
  }
  return absl::OkStatus();
}

}  // namespace kvstash::server
