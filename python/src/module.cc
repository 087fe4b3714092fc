// kvstash._native: the extension module under the kvstash package (kvstash/_native.pyi).
#include "errors.h"
#include "nanobind/nanobind.h"
#include "py_client.h"
#include "py_namespace.h"

NB_MODULE(_native, m) {
  m.doc() = "Native bindings of libkvstash_client; use the kvstash package instead.";
  // Objects alive at interpreter exit (a client the program never closed) are not bugs.
  nanobind::set_leak_warnings(false);
  kvstash::python::RegisterErrorTranslator();
  kvstash::python::BindNamespace(m);
  kvstash::python::BindClient(m);
}
