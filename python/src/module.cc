// kvstash._native: the extension module under the kvstash package (kvstash/_native.pyi).
#include <cstdint>

#include "errors.h"
#include "fetch_advisor.h"
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
  kvstash::python::BindFetchAdvisor(m);
  // Engine adapters reach host KV pools that engines describe by address (SGLang's
  // get_page_buffer_meta); the memoryview lets them go through the buffer path unchanged.
  m.def(
      "memory_at",
      [](uintptr_t address, size_t size) {
        if (address == 0 || size == 0) kvstash::python::ThrowInvalid("memory_at: empty range");
        return nanobind::steal(PyMemoryView_FromMemory(reinterpret_cast<char*>(address),
                                                       static_cast<Py_ssize_t>(size), PyBUF_WRITE));
      },
      nanobind::arg("address"), nanobind::arg("size"),
      "A writable memoryview of `size` bytes at `address` (the caller vouches for it).");
}
