#include "server/log_options.h"

#include "server/config_choices.h"

namespace kvstash::server {

absl::string_view LogLevelName(LogLevel level) {
  return ChoiceName(level, Choices<LogLevel>(kLogLevels));
}

absl::string_view LogFormatName(LogFormat format) {
  return ChoiceName(format, Choices<LogFormat>(kLogFormats));
}

}  // namespace kvstash::server
