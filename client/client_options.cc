// ClientOptions::Validate: reject settings that would make every call fail in a confusing
// way later (a zero deadline, frames larger than gRPC will carry) at Connect instead. The
// ranges are the schema's (kvstash/client_options_schema.h); so are SetClientOption and
// the option table.
#include <cstdint>
#include <cstdlib>
#include <limits>
#include <string>
#include <vector>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/bearer_token.h"
#include "kvstash/client.h"
#include "kvstash/client_options_schema.h"
#include "proto/ucx_wire.h"

namespace kvstash {
namespace {

// The first field outside its range or choices, named as ClientOptions.<dotted name>.
class RangeCheck : public OptionSections {
 public:
  absl::Status status;

  template <typename T>
  void Int(const char* name, T* field, OptionRange range, const char* /*doc*/) {
    const int64_t value = static_cast<int64_t>(*field);
    if (!status.ok() || (value >= range.min && value <= range.max)) return;
    status = absl::InvalidArgumentError(absl::StrCat("ClientOptions.", Dotted(name), " = ", value,
                                                     " is out of range [", range.min, ", ",
                                                     range.max, "]"));
  }
  void Bool(const char*, bool*, const char*) {}
  void String(const char*, std::string*, const char*) {}
  void Choice(const char* name, std::string* field, OptionChoices choices, const char* /*doc*/) {
    if (!status.ok()) return;
    for (const char* c : choices) {
      if (*field == c) return;
    }
    status =
        absl::InvalidArgumentError(absl::StrCat("ClientOptions.", Dotted(name), " = \"", *field,
                                                "\" is not one of ", absl::StrJoin(choices, ", ")));
  }
};

// Sets the field named `name` from text.
class SetFromText : public OptionSections {
 public:
  SetFromText(absl::string_view name, absl::string_view value) : name_(name), value_(value) {}

  bool found = false;
  absl::Status status;

  template <typename T>
  void Int(const char* name, T* field, OptionRange, const char*) {
    if (!Matches(name)) return;
    int64_t n = 0;
    static_assert(std::numeric_limits<T>::max() <= std::numeric_limits<int64_t>::max());
    if (!absl::SimpleAtoi(value_, &n) || n < int64_t{std::numeric_limits<T>::min()} ||
        n > int64_t{std::numeric_limits<T>::max()}) {
      status = Invalid(absl::StrCat("an integer from ", std::numeric_limits<T>::min(), " to ",
                                    std::numeric_limits<T>::max()));
      return;
    }
    *field = static_cast<T>(n);
  }
  void Bool(const char* name, bool* field, const char*) {
    if (!Matches(name)) return;
    if (value_ != "true" && value_ != "false") {
      status = Invalid("true or false");
      return;
    }
    *field = value_ == "true";
  }
  void String(const char* name, std::string* field, const char*) {
    if (Matches(name)) *field = std::string(value_);
  }
  void Choice(const char* name, std::string* field, OptionChoices, const char*) {
    if (Matches(name)) *field = std::string(value_);
  }

 private:
  bool Matches(const char* name) {
    if (Dotted(name) != name_) return false;
    found = true;
    return true;
  }
  absl::Status Invalid(absl::string_view expected) const {
    return absl::InvalidArgumentError(
        absl::StrCat("client option ", name_, ": expected ", expected, ", got \"", value_, "\""));
  }

  const std::string name_;
  const std::string value_;
};

// Rows of client/README.md's option table.
class TableRows : public OptionSections {
 public:
  std::string out;

  template <typename T>
  void Int(const char* name, T* field, OptionRange, const char* doc) {
    Row(name, absl::StrCat(*field), doc);
  }
  void Bool(const char* name, bool* field, const char* doc) {
    Row(name, *field ? "true" : "false", doc);
  }
  void String(const char* name, std::string* field, const char* doc) {
    Row(name, field->empty() ? "\"\"" : *field, doc);
  }
  void Choice(const char* name, std::string* field, OptionChoices, const char* doc) {
    String(name, field, doc);
  }

 private:
  void Row(const char* name, const std::string& value, const char* doc) {
    absl::StrAppend(&out, "| `", Dotted(name), "` | `", value, "` | ", doc, " |\n");
  }
};

// A token travels in an HTTP/2 header and a length-prefixed UCX field; whitespace or a
// control character is a copy-and-paste accident (a trailing newline), never part of one.
// The message names where the token came from, never the token.
absl::Status CheckToken(const std::string& token, bool from_env) {
  const std::string source = from_env ? std::string("$") + kTokenEnvVar : "ClientOptions.token";
  if (token.size() > wire::ucx::kMaxTokenBytes) {
    return absl::InvalidArgumentError(
        absl::StrCat(source, " is longer than ", wire::ucx::kMaxTokenBytes, " bytes"));
  }
  for (const char c : token) {
    const auto u = static_cast<unsigned char>(c);
    if (u <= 0x20 || u == 0x7f) {
      return absl::InvalidArgumentError(
          absl::StrCat(source,
                       " contains whitespace or a control character (a trailing "
                       "newline from the token file?)"));
    }
  }
  return absl::OkStatus();
}

}  // namespace

std::string ClientOptions::EffectiveToken() const {
  if (!token.empty()) return token;
  const char* env = std::getenv(kTokenEnvVar);
  return env == nullptr ? std::string() : std::string(env);
}

absl::Status ClientOptions::Validate() const {
  ClientOptions o = *this;  // the visitor's fields are writable
  RangeCheck check;
  VisitClientOptions(o, check);
  if (!check.status.ok()) return check.status;
  return CheckToken(EffectiveToken(), token.empty());
}

absl::Status ClusterOptions::Validate() const {
  ClusterOptions o = *this;
  RangeCheck check;
  check.Begin("cluster", "");
  VisitClusterOptions(o, check);
  return check.status;
}

absl::Status SetClientOption(ClientOptions* options, absl::string_view name,
                             absl::string_view value) {
  SetFromText set(name, value);
  VisitClientOptions(*options, set);
  if (!set.found) {
    return absl::InvalidArgumentError(absl::StrCat("unknown client option \"", name, "\""));
  }
  return set.status;
}

std::string ClientOptionsTable() {
  ClientOptions defaults;
  TableRows rows;
  VisitClientOptions(defaults, rows);
  return absl::StrCat("| option | default | meaning |\n|---|---|---|\n", rows.out);
}

}  // namespace kvstash
