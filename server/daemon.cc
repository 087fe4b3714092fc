#include "server/daemon.h"

#include <grpc/grpc.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "common/ready_file.h"
#include "server/config_file.h"
#include "server/flags.h"
#include "server/server.h"
#include "server/systemd_notify.h"

#ifndef KVSTASH_VERSION
#define KVSTASH_VERSION "unknown"
#endif

namespace kvstash::server {
namespace {

// SIGTERM and SIGINT shut down; SIGHUP reloads the token file.
sigset_t HandledSignals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGINT);
  sigaddset(&set, SIGHUP);
  return set;
}

// Waits for signals on its own thread, so no work happens in a signal handler. The first
// SIGTERM/SIGINT requests shutdown; a second one, while draining, exits at once. SIGHUP
// runs `on_hangup` (reloading the token file) and never shuts down.
// REQUIRES: the signals are blocked in every thread (BlockHandledSignals before any
// thread starts), so sigwait is their only receiver.
class SignalWaiter {
 public:
  SignalWaiter(Logger* log, std::function<void()> on_hangup)
      : log_(log), on_hangup_(std::move(on_hangup)), thread_([this] { Loop(); }) {}
  ~SignalWaiter() {
    done_.store(true);
    pthread_kill(thread_.native_handle(), SIGTERM);  // wakes sigwait
    thread_.join();
  }

  // Returns the number of the first signal received.
  int Wait() {
    stop_.WaitForNotification();
    return signal_;
  }

 private:
  void Loop() {
    const sigset_t set = HandledSignals();
    for (int n = 0;;) {
      int sig = 0;
      if (sigwait(&set, &sig) != 0) continue;
      if (done_.load()) return;
      if (sig == SIGHUP) {
        log_->Info("SIGHUP: reloading the token file", {});
        on_hangup_();
        continue;
      }
      if (n++ == 0) {
        signal_ = sig;
        stop_.Notify();
      } else {
        log_->Warn("second signal while draining; exiting now", {{"signal", strsignal(sig)}});
        std::_Exit(kExitFailure);
      }
    }
  }

  Logger* const log_;
  const std::function<void()> on_hangup_;
  std::atomic<bool> done_{false};
  int signal_ = 0;  // written before stop_ is notified, read after
  absl::Notification stop_;
  std::thread thread_;  // last: starts once the members above exist
};

void BlockHandledSignals() {
  sigset_t set = HandledSignals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
  // Writes to a closed connection must fail with EPIPE, not kill the daemon.
  signal(SIGPIPE, SIG_IGN);
}

// Handles everything that ends the process before the server starts. Returns -1 to go on.
int HandleCommandLine(int argc, char** argv, CommandLine* cl, ServerConfig* config) {
  absl::StatusOr<CommandLine> parsed = ParseCommandLine(argc, argv);
  if (!parsed.ok()) {
    std::cerr << "usage error: " << parsed.status().message() << "\n" << Usage();
    return kExitUsage;
  }
  *cl = std::move(*parsed);
  if (cl->help) {
    std::cout << Usage();
    return kExitOk;
  }
  if (cl->version) {
    std::cout << "kvstashd " << KVSTASH_VERSION << "\n";
    return kExitOk;
  }
  absl::StatusOr<ServerConfig> loaded = LoadConfig(*cl);
  if (!loaded.ok()) {
    std::cerr << "config error: " << loaded.status().message() << "\n";
    return kExitUsage;
  }
  *config = std::move(*loaded);
  if (cl->print_config) {
    std::cout << EmitConfig(*config);
    return kExitOk;
  }
  return -1;
}

// The ready file (common/ready_file.h) for whoever started the daemon.
absl::Status WriteReadyFile(const std::string& path, const Server& server) {
  ReadyInfo info;
  info.grpc = server.connect_address();
  info.pid = getpid();
  info.metrics = server.metrics_address();
  info.ucx = server.ucx_address();
  const ReadyInfo bound = server.BoundListenerInfo();
  info.grpc_tls = bound.grpc_tls;
  info.local = bound.local;
  return WriteFileAtomically(path, FormatReadyFile(info));
}

// gRPC's TCP experiments that size socket reads to whole HTTP/2 frames: fewer, larger
// reads and wake-ups for MiB-sized Put frames. gRPC reads the variable once, at its first
// use; an operator's own GRPC_EXPERIMENTS wins.
void EnableGrpcTcpExperiments() {
  setenv("GRPC_EXPERIMENTS", "tcp_frame_size_tuning,tcp_read_chunks,tcp_rcv_lowat",
         /*overwrite=*/0);
}

// UCX reads its environment once, at its first use. The UCX listener must bind again
// after a restart while the old connections linger in the kernel (FIN_WAIT2 until each
// client notices), so it reuses its address. Under AddressSanitizer UCX's malloc/mmap
// hooks fight the sanitizer's own interceptors: turn them off (only RDMA registration
// caching needs them); under ThreadSanitizer likewise. An operator's own settings win.
void ConfigureUcxEnvironment() {
  setenv("UCX_TCP_CM_REUSEADDR", "y", /*overwrite=*/0);
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
  setenv("UCX_MEM_MALLOC_HOOKS", "no", 0);
  setenv("UCX_MEM_EVENTS", "no", 0);
#endif
}

// Keeps MiB-sized buffers (gRPC's socket reads, RocksDB's memtable blocks) on the heap, so
// freed ones are reused instead of handed back and faulted in, zeroed, again; the pad at
// the heap size stops glibc from unmapping a whole empty 64 MiB thread heap.
void KeepLargeBuffersOnHeap() {
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 256 << 20);
  mallopt(M_TOP_PAD, 64 << 20);
}

// Debian's abseil is built in debug mode, where every Mutex::Lock records the lock order in
// one process-wide graph under a global spin lock; the daemon's lock order is checked by its
// ThreadSanitizer build instead.
void SkipMutexDeadlockGraph() {
  absl::SetMutexDeadlockDetectionMode(absl::OnDeadlockCycle::kIgnore);
}

}  // namespace

int RunDaemon(int argc, char** argv) {
  SkipMutexDeadlockGraph();
  CommandLine cl;
  ServerConfig config;
  if (int code = HandleCommandLine(argc, argv, &cl, &config); code >= 0) return code;
  BlockHandledSignals();
  EnableGrpcTcpExperiments();
  ConfigureUcxEnvironment();
  KeepLargeBuffersOnHeap();
  // Held for the life of the process, never released: releasing gRPC's last reference
  // runs its library shutdown, which can block for seconds on an executor timer, and
  // would delay the exit after a clean drain.
  grpc_init();
  Logger log(config.log);
  // A stale ready file from an earlier run must not send anyone to a dead port.
  if (!cl.ready_file.empty()) std::remove(cl.ready_file.c_str());
  absl::StatusOr<std::unique_ptr<Server>> server = Server::Create(config, &log);
  if (!server.ok()) {
    // The store and the UCX context; a setting they refuse (INVALID_ARGUMENT, e.g. UCX_TLS
    // naming a transport this host lacks) is a bad configuration like any other.
    log.Error("cannot set up the store and transports", {{"status", server.status()}});
    return server.status().code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  if (absl::Status s = (*server)->Start(); !s.ok()) {
    log.Error("cannot start", {{"status", s}});
    // A TLS or token file the daemon cannot use is a bad configuration too.
    return s.code() == absl::StatusCode::kInvalidArgument ? kExitUsage : kExitFailure;
  }
  // The server a SIGHUP reloads the tokens of; null once it is going away.
  absl::Mutex reload_mu;
  Server* reloadable = server->get();
  // The authenticator logs how the reload went (and keeps the old tokens on error).
  SignalWaiter signals(&log, [&] {
    absl::MutexLock lock(&reload_mu);
    if (reloadable != nullptr) reloadable->ReloadAuth().IgnoreError();
  });
  // Liveness for the systemd watchdog: the store answers (its locks are not wedged).
  // Stopped (reset) before the server and its store are destroyed.
  auto notifier = std::make_unique<SystemdNotifier>([store = (*server)->store()] {
    store->Stats();
    return true;
  });
  if (!cl.ready_file.empty()) {
    absl::Status s = WriteReadyFile(cl.ready_file, **server);
    if (!s.ok()) {
      log.Error("cannot write the ready file", {{"status", s}});
      (*server)->Shutdown(absl::ZeroDuration());
      return kExitFailure;
    }
  }
  notifier->Ready(absl::StrCat("serving on ", (*server)->connect_address()));
  const int sig = signals.Wait();
  log.Info("shutdown requested", {{"signal", strsignal(sig)}});
  notifier->Stopping();
  (*server)->Shutdown(absl::Milliseconds(config.server.shutdown_grace_ms));
  if (!cl.ready_file.empty()) std::remove(cl.ready_file.c_str());
  notifier.reset();
  {
    absl::MutexLock lock(&reload_mu);
    reloadable = nullptr;
  }
  server->reset();
  return kExitOk;
}

}  // namespace kvstash::server
