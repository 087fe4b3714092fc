// kvstash._native: the extension module under the kvstash package (kvstash/_native.pyi).
#include <cstdint>
#include <utility>
#include <vector>

#include "errors.h"
#include "fetch_advisor.h"
#include "nanobind/nanobind.h"
#include "nanobind/ndarray.h"
#include "py_client.h"
#include "py_namespace.h"
#include "strided_copy.h"

namespace {

namespace nb = nanobind;
using kvstash::python::ThrowInvalid;

// Byte range [lo, hi) the view's elements cover.
template <typename Array>
std::pair<intptr_t, intptr_t> Extent(const void* data, const Array& a) {
  intptr_t lo = reinterpret_cast<intptr_t>(data);
  intptr_t hi = lo + static_cast<intptr_t>(a.itemsize());
  for (size_t i = 0; i < a.ndim(); ++i) {
    const intptr_t reach =
        (static_cast<intptr_t>(a.shape(i)) - 1) * a.stride(i) * static_cast<intptr_t>(a.itemsize());
    (reach < 0 ? lo : hi) += reach;
  }
  return {lo, hi};
}

void CopyStrided(nb::handle dst_obj, nb::handle src_obj) {
  nb::ndarray<nb::device::cpu> dst;
  nb::ndarray<nb::ro, nb::device::cpu> src;
  if (!nb::try_cast(dst_obj, dst, /*convert=*/false)) {
    ThrowInvalid("copy_strided: dst is not a writable CPU array (numpy, CPU torch tensor)");
  }
  if (!nb::try_cast(src_obj, src, /*convert=*/false)) {
    ThrowInvalid("copy_strided: src is not a CPU array (numpy, CPU torch tensor)");
  }
  const nb::ndarray<nb::ro> d(dst);
  if (d.ndim() != src.ndim() || d.itemsize() != src.itemsize()) {
    ThrowInvalid("copy_strided: dst and src differ in dimensions or element width");
  }
  std::vector<kvstash::python::CopyAxis> axes;
  const auto item = static_cast<int64_t>(d.itemsize());
  for (size_t i = 0; i < d.ndim(); ++i) {
    if (d.shape(i) != src.shape(i)) ThrowInvalid("copy_strided: dst and src differ in shape");
    axes.push_back({static_cast<int64_t>(d.shape(i)), d.stride(i) * item, src.stride(i) * item});
  }
  if (d.size() == 0) return;
  const auto [dlo, dhi] = Extent(dst.data(), d);
  const auto [slo, shi] = Extent(src.data(), src);
  if (dlo < shi && slo < dhi)
    ThrowInvalid("copy_strided: dst and src lie in overlapping memory ranges");
  absl::Status s;
  {
    nb::gil_scoped_release unlocked;
    s = kvstash::python::StridedCopy(dst.data(), src.data(), axes, d.itemsize());
  }
  kvstash::python::ThrowIfError(s);
}

}  // namespace

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
  m.def("copy_strided", &CopyStrided, nanobind::arg("dst"), nanobind::arg("src"),
        "dst[...] = src[...] for CPU arrays of one shape and element width, any strides.");
}
