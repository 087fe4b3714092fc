// ConfigReader: a strict, typed view of one YAML mapping of the config, used by
// config_parse.cc.
//
// Each accessor reads one key into a field that already holds its default (an absent key
// leaves the default), and records the key as known; RejectUnknown() then refuses every
// key of the mapping that no accessor asked for. The first failure is kept (shared by a
// reader and the sections it opened) and names the dotted field.
//
// Thread-safety: not thread-safe; used by one thread while a config is parsed.
#pragma once

#include <yaml-cpp/yaml.h>

#include <cstdint>
#include <memory>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/types/span.h"

namespace kvstash::server {

class ConfigReader {
 public:
  // `node` may be undefined or null (the section is absent: every field keeps its default).
  ConfigReader(YAML::Node node, std::string path);

  // The sub-mapping under `key`.
  ConfigReader Section(const std::string& key);

  void String(const std::string& key, std::string* out);
  // A byte size (integer or suffixed) within [min, max].
  void Size(const std::string& key, uint64_t min, uint64_t max, uint64_t* out);
  // An integer within [min, max].
  template <typename T>
  void Int(const std::string& key, int64_t min, int64_t max, T* out);
  // One of a fixed set of names.
  template <typename T>
  void Choice(const std::string& key, absl::Span<const std::pair<const char*, T>> choices, T* out);

  // Records a failure of `key` (the first failure wins).
  void Fail(const std::string& key, const std::string& message);
  // Fails for the first key present in the mapping that no accessor asked for.
  void RejectUnknown();

  absl::Status status() const { return *status_; }

 private:
  ConfigReader(YAML::Node node, std::string path, std::shared_ptr<absl::Status> status);

  // The scalar text under `key`, or nullptr when the key is absent (or after a failure).
  const std::string* Scalar(const std::string& key, const char* expected);
  std::string FieldName(const std::string& key) const;

  YAML::Node node_;
  std::string path_;  // dotted prefix, "" at the top level
  std::set<std::string> known_;
  std::string scalar_;
  std::shared_ptr<absl::Status> status_;
};

template <typename T>
void ConfigReader::Int(const std::string& key, int64_t min, int64_t max, T* out) {
  const std::string* text = Scalar(key, "an integer");
  if (text == nullptr) return;
  int64_t v = 0;
  if (!absl::SimpleAtoi(*text, &v) || v < min || v > max) {
    Fail(key, absl::StrCat("expected an integer in [", min, ", ", max, "], got \"", *text, "\""));
    return;
  }
  *out = static_cast<T>(v);
}

template <typename T>
void ConfigReader::Choice(const std::string& key,
                          absl::Span<const std::pair<const char*, T>> choices, T* out) {
  const std::string* text = Scalar(key, "a name");
  if (text == nullptr) return;
  std::vector<std::string> names;
  for (const auto& [name, value] : choices) {
    if (*text == name) {
      *out = value;
      return;
    }
    names.push_back(name);
  }
  Fail(key, absl::StrCat("expected one of ", absl::StrJoin(names, "|"), ", got \"", *text, "\""));
}

}  // namespace kvstash::server
