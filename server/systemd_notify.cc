#include "server/systemd_notify.h"

#include "absl/time/time.h"

#ifdef KVSTASH_HAVE_SYSTEMD
#include <systemd/sd-daemon.h>
#endif

namespace kvstash::server {

#ifdef KVSTASH_HAVE_SYSTEMD

SystemdNotifier::SystemdNotifier(std::function<bool()> healthy) : healthy_(std::move(healthy)) {
  uint64_t period_us = 0;
  if (sd_watchdog_enabled(/*unset_environment=*/0, &period_us) > 0 && period_us > 0) {
    watchdog_ = std::thread([this, period_us] { WatchdogLoop(period_us); });
  }
}

void SystemdNotifier::Ready(const std::string& status) {
  sd_notifyf(0, "READY=1\nSTATUS=%s", status.c_str());
}

void SystemdNotifier::Stopping() { sd_notify(0, "STOPPING=1\nSTATUS=draining"); }

void SystemdNotifier::WatchdogLoop(uint64_t period_us) {
  const absl::Duration interval = absl::Microseconds(period_us / 2);
  while (!stop_.WaitForNotificationWithTimeout(interval)) {
    if (healthy_()) sd_notify(0, "WATCHDOG=1");
  }
}

bool SystemdNotifier::Available() { return true; }

#else  // no libsystemd at build time: every notification is a no-op

SystemdNotifier::SystemdNotifier(std::function<bool()> healthy) : healthy_(std::move(healthy)) {}
void SystemdNotifier::Ready(const std::string&) {}
void SystemdNotifier::Stopping() {}
void SystemdNotifier::WatchdogLoop(uint64_t) {}
bool SystemdNotifier::Available() { return false; }

#endif

SystemdNotifier::~SystemdNotifier() {
  stop_.Notify();
  if (watchdog_.joinable()) watchdog_.join();
}

}  // namespace kvstash::server
