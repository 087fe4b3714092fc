// The names an enumerated config field accepts (Choices) and the name of a value
// (ChoiceName): shared by the schema (config_schema.h) and the sections that name their
// own values (log_options.h, config.h).
//
// Thread-safety: pure functions over constant tables.
#pragma once

#include <utility>

#include "absl/strings/string_view.h"
#include "absl/types/span.h"

namespace kvstash::server {

// The names a field accepts and the values they stand for; the first name of a value is
// the one written back (and the one LogLevelName and the like return).
template <typename T>
using Choices = absl::Span<const std::pair<const char*, T>>;

// The first name `choices` gives `value`.
template <typename T>
absl::string_view ChoiceName(const T& value, Choices<T> choices) {
  for (const auto& [name, v] : choices) {
    if (v == value) return name;
  }
  return "";
}

}  // namespace kvstash::server
