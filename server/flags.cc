#include "server/flags.h"

#include "absl/flags/flag.h"
#include "absl/strings/str_cat.h"
#include "common/flags.h"
#include "server/config_file.h"

ABSL_FLAG(std::string, config, "", "YAML configuration (default: the built-in one)");
ABSL_FLAG(std::string, set, "", "override one config field, KEY=VALUE (repeatable)");
ABSL_FLAG(std::string, listen, "", "same as --set server.grpc_listen=HOST:PORT");
ABSL_FLAG(std::string, ready_file, "", "once serving, write grpc=HOST:PORT lines here");
ABSL_FLAG(bool, print_config, false, "print the effective configuration as YAML and exit");

namespace kvstash::server {

absl::StatusOr<CommandLine> ParseCommandLine(int argc, const char* const* argv) {
  FlagParseOptions options;
  options.defined_in = "server/flags.cc";
  options.version_flag = true;
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(argc, argv, options);
  if (!parsed.ok()) return parsed.status();
  CommandLine cl;
  cl.help = parsed->help;
  cl.version = parsed->version;
  cl.config_path = absl::GetFlag(FLAGS_config);
  cl.listen = absl::GetFlag(FLAGS_listen);
  cl.ready_file = absl::GetFlag(FLAGS_ready_file);
  cl.print_config = absl::GetFlag(FLAGS_print_config);
  for (const std::string& value : parsed->Values("set")) {
    const size_t eq = value.find('=');
    if (eq == std::string::npos || eq == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("--set expects dotted.key=value, got \"", value, "\""));
    }
    cl.overrides.push_back({value.substr(0, eq), value.substr(eq + 1)});
  }
  return cl;
}

absl::StatusOr<ServerConfig> LoadConfig(const CommandLine& cl) {
  std::vector<ConfigOverride> overrides = cl.overrides;
  if (!cl.listen.empty()) overrides.push_back({"server.grpc_listen", cl.listen, /*literal=*/true});
  if (cl.config_path.empty()) return ParseConfig(DefaultConfigYaml(), overrides);
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
