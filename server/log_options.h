// The `log:` section's options and their names, apart from the rest of the daemon's config
// so that the logger (server/log.h) depends on nothing else. The names are the config
// schema's (server/config_schema.h reads them from here).
//
// Thread-safety: plain values and pure functions.
#pragma once

#include <utility>

#include "absl/strings/string_view.h"

namespace kvstash::server {

enum class LogLevel { kDebug = 0, kInfo = 1, kWarn = 2, kError = 3 };
enum class LogFormat { kLogfmt, kJson };

// The `log:` section. Log lines go to stderr.
struct LogConfig {
  // Lines below this level are dropped: debug | info | warn | error.
  LogLevel level = LogLevel::kInfo;
  // logfmt (`ts=... level=info msg="..." k=v`) or json (one object per line).
  LogFormat format = LogFormat::kLogfmt;
};

// The names of the levels and formats; the first name of a value is the one written back.
inline const std::pair<const char*, LogLevel> kLogLevels[] = {{"debug", LogLevel::kDebug},
                                                              {"info", LogLevel::kInfo},
                                                              {"warn", LogLevel::kWarn},
                                                              {"error", LogLevel::kError}};
inline const std::pair<const char*, LogFormat> kLogFormats[] = {{"logfmt", LogFormat::kLogfmt},
                                                                {"json", LogFormat::kJson}};

absl::string_view LogLevelName(LogLevel level);
absl::string_view LogFormatName(LogFormat format);

}  // namespace kvstash::server
