// SystemdNotifier: readiness and watchdog notifications for a systemd service with
// Type=notify and WatchdogSec= (deploy/kvstashd.service).
//
//   SystemdNotifier notifier([&] { return server->ready(); });
//   notifier.Ready("serving on 127.0.0.1:7070");   // READY=1
//   ...
//   notifier.Stopping();                            // STOPPING=1
//
// Without systemd (NOTIFY_SOCKET unset) every call is a no-op. When kvstashd was built
// without libsystemd (KVSTASH_HAVE_SYSTEMD undefined) likewise, and Available() is false.
//
// Thread-safety: owned by the daemon's main thread; the watchdog runs on its own thread
// and calls `healthy` from there.
#pragma once

#include <functional>
#include <string>
#include <thread>

#include "absl/synchronization/notification.h"

namespace kvstash::server {

class SystemdNotifier {
 public:
  // Starts a watchdog thread when systemd set WATCHDOG_USEC for this process: it sends
  // WATCHDOG=1 every half period while `healthy()` is true, so a wedged daemon (healthy()
  // blocking or false) is restarted by systemd.
  explicit SystemdNotifier(std::function<bool()> healthy);
  // Stops the watchdog thread.
  ~SystemdNotifier();

  SystemdNotifier(const SystemdNotifier&) = delete;
  SystemdNotifier& operator=(const SystemdNotifier&) = delete;

  void Ready(const std::string& status);
  void Stopping();

  // Whether this build can talk to systemd at all.
  static bool Available();

 private:
  void WatchdogLoop(uint64_t period_us);

  std::function<bool()> healthy_;
  absl::Notification stop_;
  std::thread watchdog_;
};

}  // namespace kvstash::server
