#include "server/log.h"

#include <cstdio>

#include "absl/strings/ascii.h"

namespace kvstash::server {
namespace {

// logfmt leaves a value bare when a reader cannot mistake where it ends.
bool NeedsQuotes(absl::string_view v) {
  if (v.empty()) return true;
  for (char c : v) {
    if (c == ' ' || c == '=' || c == '"' || c == '\\' || !absl::ascii_isgraph(c)) return true;
  }
  return false;
}

void AppendEscaped(absl::string_view v, bool json, std::string* out) {
  for (unsigned char c : v) {
    switch (c) {
      case '"':
        out->append("\\\"");
        break;
      case '\\':
        out->append("\\\\");
        break;
      case '\n':
        out->append("\\n");
        break;
      case '\t':
        out->append("\\t");
        break;
      case '\r':
        out->append("\\r");
        break;
      default:
        if (c < 0x20) {
          absl::StrAppend(out, json ? "\\u00" : "\\x", absl::Hex(c, absl::kZeroPad2));
        } else {
          out->push_back(static_cast<char>(c));
        }
    }
  }
}

void AppendLogfmt(absl::string_view key, absl::string_view value, std::string* out) {
  if (!out->empty()) out->push_back(' ');
  absl::StrAppend(out, key, "=");
  if (!NeedsQuotes(value)) {
    out->append(value.data(), value.size());
    return;
  }
  out->push_back('"');
  AppendEscaped(value, /*json=*/false, out);
  out->push_back('"');
}

void AppendJson(absl::string_view key, absl::string_view value, bool bare, std::string* out) {
  out->append(out->empty() ? "{\"" : ",\"");
  AppendEscaped(key, /*json=*/true, out);
  out->append("\":");
  if (bare) {
    out->append(value.data(), value.size());
    return;
  }
  out->push_back('"');
  AppendEscaped(value, /*json=*/true, out);
  out->push_back('"');
}

}  // namespace

Logger::Logger(const LogConfig& config)
    : Logger(config, [](absl::string_view line) {
        std::fwrite(line.data(), 1, line.size(), stderr);
        std::fflush(stderr);
      }) {}

Logger::Logger(const LogConfig& config, Sink sink) : config_(config), sink_(std::move(sink)) {}

void Logger::Log(LogLevel level, absl::string_view msg, LogFields fields) {
  if (!Enabled(level)) return;
  std::string line = FormatLine(config_.format, absl::Now(), level, msg, fields);
  absl::MutexLock lock(&mu_);
  sink_(line);
}

std::string Logger::FormatLine(LogFormat format, absl::Time ts, LogLevel level,
                               absl::string_view msg, LogFields fields) {
  const std::string time = absl::FormatTime("%Y-%m-%dT%H:%M:%E3SZ", ts, absl::UTCTimeZone());
  const bool json = format == LogFormat::kJson;
  std::string out;
  if (json) {
    AppendJson("ts", time, false, &out);
    AppendJson("level", LogLevelName(level), false, &out);
    AppendJson("msg", msg, false, &out);
    for (const LogField& f : fields) AppendJson(f.key(), f.value(), f.bare(), &out);
    out.append("}\n");
  } else {
    AppendLogfmt("ts", time, &out);
    AppendLogfmt("level", LogLevelName(level), &out);
    AppendLogfmt("msg", msg, &out);
    for (const LogField& f : fields) AppendLogfmt(f.key(), f.value(), &out);
    out.push_back('\n');
  }
  return out;
}

}  // namespace kvstash::server
