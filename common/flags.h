// The command-line grammar of kvstashd and kvstash_bench, over flags defined with
// ABSL_FLAG (absl/flags/flag.h):
//
//   --name=value   --name value   (a flag that is not a bool)
//   --name         --name=true|false|yes|no|1|0   (a bool flag)
//   -h, --help     ParsedFlags::help; parsing stops there
//   --version      ParsedFlags::version, where the program accepts it
//
// A '-' in a flag name reads as '_' (absl names cannot hold '-'), so --ready-file and
// --ready_file are one flag. absl::ParseCommandLine is not used: it exits the process on
// an error, keeps only the last value of a repeated flag and prints its own help.
//
// ParseFlags first resets the flags of FlagParseOptions::defined_in to their defaults,
// then stores the given values in them; the caller copies them into its own struct:
//
//   FlagParseOptions options;
//   options.defined_in = "server/flags.cc";
//   absl::StatusOr<ParsedFlags> parsed = ParseFlags(args, options);
//   if (!parsed.ok()) return parsed.status();
//   cl.listen = absl::GetFlag(FLAGS_listen);
//
// Thread-safety: ParseFlags writes process-wide flags: call it from one thread at a time.
#pragma once

#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash {

struct FlagParseOptions {
  // When set, only flags defined in a file whose path ends with this ("server/flags.cc")
  // are accepted, so that flags some linked library defines never reach the program, and
  // those flags start from their defaults at every parse.
  std::string defined_in;
  // Whether --version is a flag of the program.
  bool version_flag = false;
  // Whether arguments that are not flags are allowed (ParsedFlags::positional); when
  // false they are an INVALID_ARGUMENT.
  bool allow_positional = false;
};

struct ParsedFlags {
  bool help = false;     // -h or --help was given
  bool version = false;  // --version was given
  // Every flag use in command-line order: (name with '_', value as written; "true" for a
  // bare bool). A repeatable flag such as --set reads all of its uses from here.
  std::vector<std::pair<std::string, std::string>> uses;
  std::vector<std::string> positional;

  // Whether flag `name` was given.
  bool Given(absl::string_view name) const;
  // The values of every use of `name`, in order.
  std::vector<std::string> Values(absl::string_view name) const;
};

// Parses `args` (without the program name). INVALID_ARGUMENT with a one-line message for
// an unknown flag, a missing value, a value the flag's type rejects, a value given to
// --help or --version, or an unexpected positional argument.
absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const FlagParseOptions& options);

// ParseFlags over main()'s argv (argv[0] skipped).
absl::StatusOr<ParsedFlags> ParseFlags(int argc, const char* const* argv,
                                       const FlagParseOptions& options);

}  // namespace kvstash
