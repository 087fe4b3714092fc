#include "errors.h"

#include <string>
#include <utility>

#include "nanobind/stl/string.h"

namespace nb = nanobind;

namespace kvstash::python {

void ThrowInvalid(std::string message) {
  throw StatusError(absl::InvalidArgumentError(std::move(message)));
}

nb::object ErrorObject(const absl::Status& status) {
  nb::object from_status = nb::module_::import_("kvstash._errors").attr("from_status");
  return from_status(static_cast<int>(status.code()), std::string(status.message()));
}

void RegisterErrorTranslator() {
  nb::register_exception_translator([](const std::exception_ptr& p, void*) {
    try {
      std::rethrow_exception(p);
    } catch (const StatusError& e) {
      nb::object error = ErrorObject(e.status());
      PyErr_SetObject(reinterpret_cast<PyObject*>(Py_TYPE(error.ptr())), error.ptr());
    }
  });
}

}  // namespace kvstash::python
