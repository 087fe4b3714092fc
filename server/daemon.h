// The kvstashd process: command line -> config -> server -> wait for SIGTERM/SIGINT.
//
// Exit codes: 0 after a clean shutdown (and for --help, --version, --print_config);
// 1 when the daemon could not start (address in use, arena not reserved, ready file not
// written); 2 for a bad command line or config, with a message naming the flag or field.
//
// Thread-safety: RunDaemon is called once, from main, before any other thread exists.
#pragma once

namespace kvstash::server {

inline constexpr int kExitOk = 0;
inline constexpr int kExitFailure = 1;
inline constexpr int kExitUsage = 2;

int RunDaemon(int argc, char** argv);

}  // namespace kvstash::server
