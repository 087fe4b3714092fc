// Fuzzes the config reader (server/config.h ParseConfig): YAML text and `--set` overrides
// into a validated ServerConfig. Input: the YAML text, optionally followed by a NUL byte
// and NUL-separated overrides `key=value` (a leading '!' takes the value literally).
// Checks: an accepted config survives EmitConfig -> ParseConfig unchanged.
#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "absl/strings/str_split.h"
#include "fuzz_util.h"
#include "server/config.h"
#include "server/config_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvstash::server;
  const absl::string_view in(reinterpret_cast<const char*>(data), size);
  const size_t nul = in.find('\0');
  const absl::string_view yaml = in.substr(0, nul);
  std::vector<ConfigOverride> overrides;
  if (nul != absl::string_view::npos) {
    for (absl::string_view item : absl::StrSplit(in.substr(nul + 1), '\0')) {
      ConfigOverride o;
      o.literal = absl::ConsumePrefix(&item, "!");
      const size_t eq = item.find('=');
      o.key = std::string(item.substr(0, eq));
      if (eq != absl::string_view::npos) o.value = std::string(item.substr(eq + 1));
      overrides.push_back(std::move(o));
    }
  }
  absl::StatusOr<ServerConfig> config = ParseConfig(yaml, overrides);
  if (!config.ok()) {
    FUZZ_CHECK(config.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  const std::string emitted = EmitConfig(*config);
  absl::StatusOr<ServerConfig> again = ParseConfig(emitted, {});
  if (!again.ok()) {
    std::fprintf(stderr, "%s\n%s\n", std::string(again.status().message()).c_str(),
                 emitted.c_str());
  }
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(EmitConfig(*again) == emitted);
  return 0;
}
