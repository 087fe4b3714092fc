// kvstash: command-line access to a kvstashd daemon (put, get, lookup, exists, delete,
// stats, health), and bearer tokens for it (token new, token hash). See UsageText() in
// args.cc or run `kvstash --help`.
#include <iostream>
#include <string>
#include <vector>

#include "client/cli/args.h"
#include "client/cli/commands.h"
#include "client/cli/token_commands.h"

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
  if (kvstash::cli::IsLocalCommand(args->command)) {
    return kvstash::cli::RunLocalCommand(*args, std::cin, std::cout, std::cerr);
  }
  return kvstash::cli::RunCommand(*args, std::cout, std::cerr);
}
