// kvstashd's command line:
//   kvstashd [--config FILE] [--set dotted.key=value ...] [--listen HOST:PORT]
//            [--ready_file PATH] [--print_config] [--help] [--version]
// The flags are absl flags read with common/flags.h's grammar: a value as the next
// argument or after '=' (--listen=127.0.0.1:0).
//
// Thread-safety: ParseCommandLine uses process-wide flags; call it from one thread at a
// time (main). LoadConfig and Usage are safe from any thread.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/config.h"

namespace kvstash::server {

struct CommandLine {
  std::string config_path;                // empty: the embedded default configuration
  std::vector<ConfigOverride> overrides;  // --set, in order
  std::string listen;                     // --listen; applied after every --set
  std::string ready_file;                 // empty: write none
  bool print_config = false;
  bool help = false;
  bool version = false;
};

// INVALID_ARGUMENT for an unknown flag, a missing value, a bool flag's malformed value or
// a malformed --set.
absl::StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv);

// The configuration the command line asks for: --config FILE (or the embedded default)
// with the overrides applied.
absl::StatusOr<ServerConfig> LoadConfig(const CommandLine& cl);

// Help text listing the flags.
std::string Usage();

}  // namespace kvstash::server
