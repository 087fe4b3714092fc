#include "server/flags.h"

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/strings/strip.h"

namespace kvstash::server {
namespace {

// Flags that take a value.
constexpr absl::string_view kValueFlags[] = {"config", "set", "listen", "ready_file"};

bool TakesValue(absl::string_view name) {
  for (absl::string_view f : kValueFlags) {
    if (f == name) return true;
  }
  return false;
}

absl::Status ApplyFlag(absl::string_view name, const std::string& value, CommandLine* cl) {
  if (name == "config") {
    cl->config_path = value;
  } else if (name == "ready_file") {
    cl->ready_file = value;
  } else if (name == "listen") {
    cl->listen = value;
  } else if (name == "set") {
    size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set expects dotted.key=value, got \"", value, "\""));
    }
    cl->overrides.push_back({value.substr(0, eq), value.substr(eq + 1)});
  }
  return absl::OkStatus();
}

absl::Status ApplySwitch(absl::string_view name, CommandLine* cl) {
  if (name == "print_config") {
    cl->print_config = true;
  } else if (name == "help" || name == "h") {
    cl->help = true;
  } else if (name == "version") {
    cl->version = true;
  } else {
    return absl::InvalidArgumentError(absl::StrCat("unknown flag --", name));
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  CommandLine cl;
  for (int i = 1; i < argc; ++i) {
    absl::string_view arg = argv[i];
    if (arg == "-h") arg = "--help";
    if (!absl::ConsumePrefix(&arg, "--") || arg.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("unexpected argument \"", argv[i], "\""));
    }
    size_t eq = arg.find('=');
    absl::string_view name = arg.substr(0, eq);
    if (!TakesValue(name)) {
      if (eq != absl::string_view::npos) {
        return absl::InvalidArgumentError(absl::StrCat("flag --", name, " takes no value"));
      }
      if (absl::Status s = ApplySwitch(name, &cl); !s.ok()) return s;
      continue;
    }
    std::string value;
    if (eq != absl::string_view::npos) {
      value = std::string(arg.substr(eq + 1));
    } else if (i + 1 < argc) {
      value = argv[++i];
    } else {
      return absl::InvalidArgumentError(absl::StrCat("flag --", name, " needs a value"));
    }
    if (absl::Status s = ApplyFlag(name, value, &cl); !s.ok()) return s;
  }
  return cl;
}

absl::StatusOr<ServerConfig> LoadConfig(const CommandLine& cl) {
  std::vector<ConfigOverride> overrides = cl.overrides;
  if (!cl.listen.empty()) overrides.push_back({"server.grpc_listen", cl.listen, /*literal=*/true});
  if (cl.config_path.empty()) return ParseConfig(kDefaultConfigYaml, overrides);
  return LoadConfigFile(cl.config_path, overrides);
}

std::string Usage() {
  return R"(usage: kvstashd [flags]
  --config FILE          YAML configuration (default: the built-in one, see --print_config)
  --set KEY=VALUE        override one config field, e.g. --set storage.dram.capacity_bytes=8GiB
                         (repeatable; applied in order after the file)
  --listen HOST:PORT     same as --set server.grpc_listen=HOST:PORT; port 0 picks a free port
  --ready_file PATH      once serving, write "grpc=HOST:PORT" (and more key=value lines) here
  --print_config         print the effective configuration as YAML and exit
  --version              print the version and exit
  --help                 print this help and exit
)";
}

}  // namespace kvstash::server
