#include "tests/metrics_test_util.h"

#include <sys/wait.h>

#include <cstdio>
#include <fstream>
#include <regex>
#include <sstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "server/metrics/http_server.h"
#include "testing/http_get.h"

namespace kvstash::testing {

absl::StatusOr<std::string> MetricsAddress(const DaemonProcess& daemon) {
  if (!daemon.ready().metrics.empty()) return daemon.ready().metrics;
  return absl::NotFoundError("no metrics= line in the ready file");
}

absl::StatusOr<std::string> Scrape(const std::string& address) {
  absl::StatusOr<HttpResponse> r = HttpGet(address, "/metrics");
  if (!r.ok()) return r.status();
  if (r->status != 200) return absl::UnavailableError(absl::StrCat("HTTP ", r->status));
  return r->body;
}

absl::StatusOr<double> MetricValue(const DaemonProcess& daemon, const std::string& series) {
  absl::StatusOr<std::string> address = MetricsAddress(daemon);
  if (!address.ok()) return address.status();
  absl::StatusOr<std::string> text = Scrape(*address);
  if (!text.ok()) return text.status();
  const std::string line = "\n" + series + " ";
  const size_t at = ("\n" + *text).find(line);
  if (at == std::string::npos) return absl::NotFoundError(absl::StrCat("no sample ", series));
  return std::stod(text->substr(at + line.size() - 1));
}

std::set<std::string> ExportedNames(const std::string& exposition) {
  std::set<std::string> names;
  for (absl::string_view line : absl::StrSplit(exposition, '\n')) {
    if (!absl::ConsumePrefix(&line, "# TYPE ")) continue;
    std::vector<std::string> parts = absl::StrSplit(line, ' ');
    if (parts.size() != 2) continue;
    names.insert(parts[0]);
    if (parts[1] == "histogram") {
      for (const char* suffix : {"_bucket", "_sum", "_count"}) names.insert(parts[0] + suffix);
    }
  }
  return names;
}

std::set<std::string> MetricTokens(const std::string& text) {
  static const std::regex kToken("kvstash_[a-z0-9_]+");
  std::set<std::string> out;
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kToken);
       it != std::sregex_iterator(); ++it) {
    out.insert(it->str());
  }
  return out;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

absl::StatusOr<std::vector<PanelQuery>> DashboardQueries(const std::string& path) {
  const std::string command = absl::StrCat(
      "python3 -c 'import json,sys\n"
      "d = json.load(open(sys.argv[1]))\n"
      "for p in d[\"panels\"]:\n"
      "  for t in p.get(\"targets\", []): print(p[\"title\"] + \"\\t\" + t[\"expr\"])' ",
      path, " 2>&1");
  FILE* pipe = popen(command.c_str(), "r");
  if (pipe == nullptr) return absl::UnavailableError("cannot run python3");
  std::string out;
  char buf[4096];
  while (size_t n = fread(buf, 1, sizeof(buf), pipe)) out.append(buf, n);
  const int status = pclose(pipe);
  if (WIFEXITED(status) && WEXITSTATUS(status) == 127) {
    return absl::UnavailableError("python3 not found");
  }
  if (status != 0) return absl::InvalidArgumentError(absl::StrCat(path, ": ", out));
  std::vector<PanelQuery> queries;
  for (absl::string_view line : absl::StrSplit(out, '\n', absl::SkipEmpty())) {
    std::pair<std::string, std::string> kv = absl::StrSplit(line, absl::MaxSplits('\t', 1));
    queries.push_back({kv.first, kv.second});
  }
  return queries;
}

namespace {

std::string UrlEncode(absl::string_view s) {
  std::string out;
  for (unsigned char c : s) {
    if (isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      absl::StrAppend(&out, "%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return out;
}

}  // namespace

absl::StatusOr<std::vector<QuerySample>> PromQuery(const std::string& address,
                                                   const std::string& promql, double unix_time) {
  const std::string path = absl::StrCat("/api/v1/query?query=", UrlEncode(promql),
                                        "&time=", absl::StrFormat("%.3f", unix_time));
  absl::StatusOr<HttpResponse> r = HttpGet(address, path, 10000);
  if (!r.ok()) return r.status();
  if (r->status != 200 || r->body.find("\"status\":\"success\"") == std::string::npos) {
    return absl::InvalidArgumentError(absl::StrCat(promql, ": HTTP ", r->status, " ", r->body));
  }
  // Each vector element: {"metric":{...},"value":[<ts>,"<value>"]}.
  static const std::regex kSample(
      R"re(\{"metric":(\{[^}]*\}),"value":\[[0-9.e+]+,"([^"]*)"\]\})re");
  std::vector<QuerySample> out;
  for (auto it = std::sregex_iterator(r->body.begin(), r->body.end(), kSample);
       it != std::sregex_iterator(); ++it) {
    QuerySample s;
    s.metric = (*it)[1].str();
    if (!absl::SimpleAtod((*it)[2].str(), &s.value)) continue;
    out.push_back(s);
  }
  return out;
}

std::string Instantiate(std::string expr, const std::string& window) {
  return absl::StrReplaceAll(expr, {{"$__rate_interval", window}, {"$instance", ".*"}});
}

}  // namespace kvstash::testing
