#include "common/flags.h"

#include "absl/flags/commandlineflag.h"
#include "absl/flags/reflection.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace kvstash {
namespace {

absl::Status UsageError(absl::string_view message) { return absl::InvalidArgumentError(message); }

// Reads one flag use starting at args[*i] (already known to start with "--"), advancing
// *i past a separate value.
absl::Status ParseOne(const std::vector<std::string>& args, const FlagParseOptions& options,
                      size_t* i, ParsedFlags* out) {
  absl::string_view arg = args[*i];
  arg.remove_prefix(2);
  const size_t eq = arg.find('=');
  const bool has_value = eq != absl::string_view::npos;
  const std::string name = absl::StrReplaceAll(arg.substr(0, eq), {{"-", "_"}});
  absl::CommandLineFlag* flag = absl::FindCommandLineFlag(name);
  if (flag == nullptr || name.empty() ||
      (!options.defined_in.empty() && !absl::EndsWith(flag->Filename(), options.defined_in))) {
    return UsageError(absl::StrCat("unknown flag --", arg.substr(0, eq)));
  }
  std::string value;
  if (has_value) {
    value = std::string(arg.substr(eq + 1));
  } else if (flag->IsOfType<bool>()) {
    value = "true";
  } else if (*i + 1 < args.size()) {
    value = args[++*i];
  } else {
    return UsageError(absl::StrCat("flag --", arg, " needs a value"));
  }
  std::string error;
  if (!flag->ParseFrom(value, &error)) {
    return UsageError(absl::StrCat("flag --", arg.substr(0, eq), ": ", error));
  }
  out->uses.emplace_back(name, std::move(value));
  return absl::OkStatus();
}

// Every parse starts from the defaults, so a parse never sees an earlier one's values.
// (absl::FlagSaver would do the same but logs each restored flag.)
void ResetToDefaults(absl::string_view defined_in) {
  if (defined_in.empty()) return;
  for (const auto& [name, flag] : absl::GetAllFlags()) {
    if (!absl::EndsWith(flag->Filename(), defined_in)) continue;
    std::string ignored;
    flag->ParseFrom(flag->DefaultValue(), &ignored);
  }
}

}  // namespace

bool ParsedFlags::Given(absl::string_view name) const {
  for (const auto& use : uses) {
    if (use.first == name) return true;
  }
  return false;
}

std::vector<std::string> ParsedFlags::Values(absl::string_view name) const {
  std::vector<std::string> values;
  for (const auto& use : uses) {
    if (use.first == name) values.push_back(use.second);
  }
  return values;
}

absl::StatusOr<ParsedFlags> ParseFlags(const std::vector<std::string>& args,
                                       const FlagParseOptions& options) {
  ResetToDefaults(options.defined_in);
  ParsedFlags out;
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& arg = args[i];
    if (arg == "-h" || arg == "--help") {
      out.help = true;
      return out;
    }
    if (options.version_flag && arg == "--version") {
      out.version = true;
      continue;
    }
    if (absl::StartsWith(arg, "--help=") || absl::StartsWith(arg, "--version=")) {
      return UsageError(absl::StrCat("flag ", arg.substr(0, arg.find('=')), " takes no value"));
    }
    if (!absl::StartsWith(arg, "--") || arg == "--") {
      if (!options.allow_positional || arg == "--") {
        return UsageError(absl::StrCat("unexpected argument \"", arg, "\""));
      }
      out.positional.push_back(arg);
      continue;
    }
    if (absl::Status s = ParseOne(args, options, &i, &out); !s.ok()) return s;
  }
  return out;
}

absl::StatusOr<ParsedFlags> ParseFlags(int argc, const char* const* argv,
                                       const FlagParseOptions& options) {
  std::vector<std::string> args;
  for (int i = 1; i < argc; ++i) args.emplace_back(argv[i]);
  return ParseFlags(args, options);
}

}  // namespace kvstash
