#include "server/service_env.h"

namespace kvstash::server {

absl::Status ServiceEnv::Admit() const {
  if (draining.load(std::memory_order_relaxed)) {
    return absl::UnavailableError("kvstashd is shutting down");
  }
  return absl::OkStatus();
}

}  // namespace kvstash::server
