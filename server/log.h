// A small structured logger: one line per event, logfmt or JSON, to stderr.
//
//   log.Info("listening", {{"addr", addr}, {"port", port}});
//   -> ts=2024-05-01T12:00:00.123Z level=info msg=listening addr=127.0.0.1 port=7070
//
// Timestamps are RFC 3339 in UTC with milliseconds. Lines below the configured level are
// dropped before they are formatted.
//
// Thread-safety: thread-safe; lines from concurrent callers never interleave.
#pragma once

#include <functional>
#include <initializer_list>
#include <string>
#include <type_traits>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/string_view.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "server/log_options.h"

namespace kvstash::server {

// One `key=value` of a log line. Numbers and booleans are written bare, text quoted as needed.
class LogField {
 public:
  LogField(absl::string_view key, absl::string_view value) : key_(key), value_(value) {}
  LogField(absl::string_view key, const char* value) : key_(key), value_(value) {}
  LogField(absl::string_view key, const std::string& value) : key_(key), value_(value) {}
  LogField(absl::string_view key, bool value)
      : key_(key), value_(value ? "true" : "false"), bare_(true) {}
  template <typename T, typename = std::enable_if_t<std::is_arithmetic_v<T>>>
  LogField(absl::string_view key, T value) : key_(key), value_(absl::StrCat(value)), bare_(true) {}
  // A status is written as its code name, or "OK", plus the message when there is one.
  LogField(absl::string_view key, const absl::Status& status)
      : key_(key), value_(status.ToString()) {}

  absl::string_view key() const { return key_; }
  absl::string_view value() const { return value_; }
  bool bare() const { return bare_; }

 private:
  std::string key_;
  std::string value_;
  bool bare_ = false;  // number or boolean: no quotes in JSON
};

using LogFields = std::initializer_list<LogField>;

class Logger {
 public:
  // Receives each complete line, newline included.
  using Sink = std::function<void(absl::string_view line)>;

  // Writes to stderr.
  explicit Logger(const LogConfig& config);
  Logger(const LogConfig& config, Sink sink);

  bool Enabled(LogLevel level) const { return level >= config_.level; }
  void Log(LogLevel level, absl::string_view msg, LogFields fields = {});
  void Debug(absl::string_view msg, LogFields fields = {}) { Log(LogLevel::kDebug, msg, fields); }
  void Info(absl::string_view msg, LogFields fields = {}) { Log(LogLevel::kInfo, msg, fields); }
  void Warn(absl::string_view msg, LogFields fields = {}) { Log(LogLevel::kWarn, msg, fields); }
  void Error(absl::string_view msg, LogFields fields = {}) { Log(LogLevel::kError, msg, fields); }

  // One formatted line, newline included.
  static std::string FormatLine(LogFormat format, absl::Time ts, LogLevel level,
                                absl::string_view msg, LogFields fields);

 private:
  const LogConfig config_;
  absl::Mutex mu_;
  Sink sink_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kvstash::server
