// kvstash: command-line access to a kvstashd daemon (put, get, lookup, exists, delete,
// stats, health). See UsageText() in args.cc or run `kvstash --help`.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/args.h"
#include "client/cli/commands.h"

int main(int argc, char** argv) {
  std::vector<std::string> argv_list(argv + 1, argv + argc);
  absl::StatusOr<kvstash::cli::CliArgs> args = kvstash::cli::ParseArgs(argv_list);
  if (!args.ok()) {
    std::cerr << "kvstash: " << args.status().message() << "\n";
    return kvstash::cli::kExitUsage;
  }
  if (args->help) {
    std::cout << kvstash::cli::UsageText();
    return kvstash::cli::kExitOk;
  }
  return kvstash::cli::RunCommand(*args, std::cout, std::cerr);
}
