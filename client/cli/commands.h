// The `kvstash` tool's commands, each run against a connected client.
//
// Thread-safety: RunCommand is called once, from main.
#pragma once

#include <ostream>

#include "client/cli/args.h"

namespace kvstash::cli {

inline constexpr int kExitOk = 0;
inline constexpr int kExitCallFailed = 1;
inline constexpr int kExitUsage = 2;

// Connects, runs args.command, prints results to `out` and a failure (with the status
// code name) to `err`. Returns the process exit code.
int RunCommand(const CliArgs& args, std::ostream& out, std::ostream& err);

}  // namespace kvstash::cli
