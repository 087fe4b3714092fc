#include "server/config_reader.h"

#include <vector>

#include "common/byte_size.h"

namespace kvstash::server {

ConfigReader::ConfigReader(YAML::Node node, std::string path)
    : ConfigReader(std::move(node), std::move(path), std::make_shared<absl::Status>()) {}

ConfigReader::ConfigReader(YAML::Node node, std::string path, std::shared_ptr<absl::Status> status)
    : node_(std::move(node)), path_(std::move(path)), status_(std::move(status)) {}

std::string ConfigReader::FieldName(const std::string& key) const {
  return path_.empty() ? key : absl::StrCat(path_, ".", key);
}

void ConfigReader::Fail(const std::string& key, const std::string& message) {
  if (status_->ok()) {
    *status_ = absl::InvalidArgumentError(absl::StrCat(FieldName(key), ": ", message));
  }
}

ConfigReader ConfigReader::Section(const std::string& key) {
  known_.insert(key);
  YAML::Node child;  // null: the section is absent
  if (node_.IsMap()) {
    const YAML::Node& self = node_;  // const lookup: never inserts the key
    // A missing key yields an invalid node that throws on most uses; keep null instead.
    YAML::Node value = self[key];
    if (value.IsDefined()) child.reset(value);
  }
  if (child.IsDefined() && !child.IsNull() && !child.IsMap()) {
    Fail(key, "expected a section (a mapping of keys)");
    child.reset(YAML::Node());
  }
  return ConfigReader(child, FieldName(key), status_);
}

const std::string* ConfigReader::Scalar(const std::string& key, const char* expected) {
  known_.insert(key);
  if (!status_->ok() || !node_.IsMap()) return nullptr;
  const YAML::Node& self = node_;
  YAML::Node value = self[key];
  if (!value.IsDefined()) return nullptr;
  if (!value.IsScalar()) {
    Fail(key, absl::StrCat("expected ", expected, ", got ",
                           value.IsNull() ? "no value" : "a list or mapping"));
    return nullptr;
  }
  scalar_ = value.Scalar();
  return &scalar_;
}

void ConfigReader::String(const std::string& key, std::string* out) {
  const std::string* text = Scalar(key, "a string");
  if (text != nullptr) *out = *text;
}

void ConfigReader::Size(const std::string& key, uint64_t min, uint64_t max, uint64_t* out) {
  const std::string* text = Scalar(key, "a byte size");
  if (text == nullptr) return;
  absl::StatusOr<uint64_t> v = ParseByteSize(*text);
  if (!v.ok()) {
    Fail(key, absl::StrCat("expected a byte size like 4GiB, got \"", *text, "\""));
    return;
  }
  if (*v < min || *v > max) {
    Fail(key, max == UINT64_MAX
                  ? absl::StrCat("must be at least ", FormatByteSize(min), ", got ", *text)
                  : absl::StrCat("must be between ", FormatByteSize(min), " and ",
                                 FormatByteSize(max), ", got ", *text));
    return;
  }
  *out = *v;
}

void ConfigReader::RejectUnknown() {
  if (!status_->ok() || !node_.IsMap()) return;
  for (const auto& entry : node_) {
    const std::string key = entry.first.IsScalar() ? entry.first.Scalar() : "?";
    if (known_.count(key) != 0) continue;
    std::vector<std::string> names(known_.begin(), known_.end());
    Fail(key, absl::StrCat("unknown key (known keys here: ", absl::StrJoin(names, ", "), ")"));
    return;
  }
}

}  // namespace kvstash::server
