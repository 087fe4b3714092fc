// Writing a configuration out: EmitConfig, the documented default config and README.md's
// reference table, all from the schema's walk (config_schema.h).
#include <yaml-cpp/yaml.h>

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/byte_size.h"
#include "server/config_file.h"
#include "server/config_schema.h"

namespace kvstash::server {
namespace {

constexpr char kSizesNote[] =
    "Sizes take `KiB/MiB/GiB/TiB` (or decimal `KB/MB/GB/TB`) suffixes. Unknown keys are errors.";
constexpr size_t kCommentWidth = 100;

// Lists each section and field with its dotted key, its value as text and its doc.
class ListVisitor {
 public:
  std::vector<ConfigEntry> entries;

  void Begin(const char* section, const char* doc) {
    Add(section, "", doc).section = true;
    prefix_.push_back(absl::StrCat(section, "."));
  }
  void End() { prefix_.pop_back(); }
  void String(const char* key, std::string* field, const char* doc) {
    Add(key, *field, doc).quoted = true;
  }
  void Size(const char* key, uint64_t* field, SizeRange, const char* doc) {
    Add(key, FormatByteSize(*field), doc);
  }
  template <typename T>
  void Int(const char* key, T* field, IntRange, const char* doc) {
    Add(key, absl::StrCat(*field), doc);
  }
  void Bool(const char* key, bool* field, const char* doc) {
    Add(key, *field ? "true" : "false", doc);
  }
  template <typename T>
  void Enum(const char* key, T* field, Choices<T> choices, const char* doc) {
    Add(key, std::string(ChoiceName(*field, choices)), doc);
  }

 private:
  ConfigEntry& Add(const char* key, std::string value, const char* doc) {
    entries.push_back({absl::StrCat(absl::StrJoin(prefix_, ""), key), std::move(value), doc});
    return entries.back();
  }

  std::vector<std::string> prefix_;
};

// A doc's Markdown as plain text for a YAML comment: code spans lose their backticks, and
// a link keeps its text (plus its target when that is a file).
std::string PlainText(absl::string_view markdown) {
  std::string out;
  for (size_t i = 0; i < markdown.size(); ++i) {
    const char c = markdown[i];
    if (c == '`') continue;
    const size_t close = c == '[' ? markdown.find("](", i) : absl::string_view::npos;
    const size_t end = close == absl::string_view::npos ? close : markdown.find(')', close);
    if (end == absl::string_view::npos) {
      out += c;
      continue;
    }
    const absl::string_view text = markdown.substr(i + 1, close - i - 1);
    const absl::string_view target = markdown.substr(close + 2, end - close - 2);
    if (target.empty() || target[0] == '#') {
      absl::StrAppend(&out, text, " (README.md)");
    } else {
      absl::StrAppend(&out, text, text == target ? "" : absl::StrCat(" (", target, ")"));
    }
    i = end;
  }
  return out;
}

// `text` as comment lines at `indent`, wrapped at kCommentWidth.
void AppendComment(absl::string_view text, const std::string& indent, std::string* out) {
  std::string line;
  for (absl::string_view word : absl::StrSplit(text, ' ', absl::SkipEmpty())) {
    if (!line.empty() && indent.size() + 2 + line.size() + 1 + word.size() > kCommentWidth) {
      absl::StrAppend(out, indent, "# ", line, "\n");
      line.clear();
    }
    absl::StrAppend(&line, line.empty() ? "" : " ", word);
  }
  if (!line.empty()) absl::StrAppend(out, indent, "# ", line, "\n");
}

// A string as a double-quoted YAML scalar, escaped as yaml-cpp reads it back.
std::string Quoted(const std::string& value) {
  YAML::Emitter e;
  e << YAML::DoubleQuoted << value;
  return e.c_str();
}

}  // namespace

std::vector<ConfigEntry> ConfigEntries(const ServerConfig& config) {
  ServerConfig c = config;  // the visitor's fields are writable
  ListVisitor list;
  VisitConfig(c, list);
  return std::move(list.entries);
}

std::string EmitConfig(const ServerConfig& config, bool documented) {
  std::string out;
  for (const ConfigEntry& e : ConfigEntries(config)) {
    const size_t depth = std::count(e.key.begin(), e.key.end(), '.');
    const std::string indent(2 * depth, ' ');
    if (documented && depth == 0 && !out.empty()) out += "\n";
    if (documented) AppendComment(PlainText(e.doc), indent, &out);
    const absl::string_view name = absl::string_view(e.key).substr(e.key.rfind('.') + 1);
    absl::StrAppend(&out, indent, name, ":");
    if (!e.section) absl::StrAppend(&out, " ", e.quoted ? Quoted(e.value) : e.value);
    out += "\n";
  }
  return out;
}

std::string DefaultConfigYaml() {
  std::string out;
  AppendComment(
      absl::StrCat("kvstashd configuration, every key at its default. ", PlainText(kSizesNote)), "",
      &out);
  return absl::StrCat(out, "\n", EmitConfig(ServerConfig{}, /*documented=*/true));
}

std::string ConfigReferenceTable() {
  std::string out = absl::StrCat(kSizesNote, "\n\n| key | default | meaning |\n|---|---|---|\n");
  for (const ConfigEntry& e : ConfigEntries(ServerConfig{})) {
    if (e.section) continue;
    absl::StrAppend(&out, "| `", e.key, "` | `", e.value.empty() ? "\"\"" : e.value, "` | ", e.doc,
                    " |\n");
  }
  return out;
}

}  // namespace kvstash::server
