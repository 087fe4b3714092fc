// Status -> Python exception: every failure the extension reports reaches Python as
// kvstash.Error (or a subclass chosen by code, kvstash/_errors.py), carrying the code.
//
// Thread-safety: StatusError is a plain value; RegisterErrorTranslator runs once at import.
#pragma once

#include <exception>
#include <string>

#include "absl/status/status.h"
#include "nanobind/nanobind.h"

namespace kvstash::python {

// Thrown by the bindings, translated into kvstash.Error by the registered translator.
class StatusError : public std::exception {
 public:
  explicit StatusError(absl::Status status) : status_(std::move(status)) {}
  const absl::Status& status() const { return status_; }
  const char* what() const noexcept override { return status_.message().data(); }

 private:
  absl::Status status_;
};

// Throws StatusError unless `status` is OK.
inline void ThrowIfError(const absl::Status& status) {
  if (!status.ok()) throw StatusError(status);
}

// Throws an INVALID_ARGUMENT StatusError with `message`.
[[noreturn]] void ThrowInvalid(std::string message);

// The kvstash.Error instance for `status` (built by kvstash._errors.from_status).
// REQUIRES: the GIL is held.
nanobind::object ErrorObject(const absl::Status& status);

void RegisterErrorTranslator();

}  // namespace kvstash::python
