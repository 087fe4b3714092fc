#include "testing/procfs.h"

#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kvstash {

absl::StatusOr<uint64_t> ReadProcStatusBytes(pid_t pid, absl::string_view field) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  if (!in) return absl::NotFoundError(absl::StrCat("no /proc/", pid, "/status"));
  std::string line;
  while (std::getline(in, line)) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, field) || !absl::ConsumePrefix(&rest, ":")) continue;
    rest = absl::StripAsciiWhitespace(rest);
    absl::ConsumeSuffix(&rest, "kB");
    uint64_t kib = 0;
    if (!absl::SimpleAtoi(absl::StripAsciiWhitespace(rest), &kib)) break;
    return kib * 1024;
  }
  return absl::InternalError(absl::StrCat("no ", field, " in /proc/", pid, "/status"));
}

absl::StatusOr<absl::Duration> ReadProcCpuTime(pid_t pid) {
  std::ifstream in(absl::StrCat("/proc/", pid, "/stat"));
  std::string stat;
  if (!std::getline(in, stat)) return absl::NotFoundError(absl::StrCat("no process ", pid));
  // The command name (field 2) may hold spaces: fields are counted after its closing ')'.
  const size_t paren = stat.rfind(')');
  if (paren == std::string::npos) {
    return absl::InternalError(absl::StrCat("cannot parse /proc/", pid, "/stat"));
  }
  std::vector<absl::string_view> fields =
      absl::StrSplit(absl::string_view(stat).substr(paren + 1), ' ', absl::SkipEmpty());
  uint64_t utime = 0;
  uint64_t stime = 0;
  // After ')': state is field 3, so utime (14) and stime (15) are at 11 and 12.
  if (fields.size() < 13 || !absl::SimpleAtoi(fields[11], &utime) ||
      !absl::SimpleAtoi(fields[12], &stime)) {
    return absl::InternalError(absl::StrCat("cannot parse /proc/", pid, "/stat"));
  }
  return absl::Seconds(static_cast<double>(utime + stime) / sysconf(_SC_CLK_TCK));
}

absl::StatusOr<HostCpuTimes> ParseHostCpuTimes(absl::string_view proc_stat) {
  for (absl::string_view line : absl::StrSplit(proc_stat, '\n')) {
    if (!absl::ConsumePrefix(&line, "cpu ")) continue;
    // user nice system idle iowait irq softirq steal guest guest_nice; guest time is
    // already counted in user and nice.
    std::vector<absl::string_view> fields = absl::StrSplit(line, ' ', absl::SkipEmpty());
    constexpr size_t kSteal = 7;
    if (fields.size() <= kSteal) break;
    HostCpuTimes t;
    for (size_t i = 0; i <= kSteal; ++i) {
      uint64_t ticks = 0;
      if (!absl::SimpleAtoi(fields[i], &ticks)) return absl::InternalError("malformed cpu line");
      t.total += ticks;
      if (i == kSteal) t.steal = ticks;
    }
    return t;
  }
  return absl::InternalError("no complete cpu line in /proc/stat");
}

absl::StatusOr<HostCpuTimes> ReadHostCpuTimes() {
  std::ifstream in("/proc/stat");
  std::stringstream text;
  text << in.rdbuf();
  if (!in) return absl::NotFoundError("cannot read /proc/stat");
  return ParseHostCpuTimes(text.str());
}

double StolenFraction(const HostCpuTimes& before, const HostCpuTimes& after) {
  if (after.total <= before.total || after.steal < before.steal) return 0;
  return static_cast<double>(after.steal - before.steal) / (after.total - before.total);
}

}  // namespace kvstash
