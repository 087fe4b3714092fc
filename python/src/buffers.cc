#include "buffers.h"

#include <cstring>
#include <utility>

#include "absl/strings/str_cat.h"
#include "errors.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

constexpr char kAccepted[] = "bytes, bytearray, memoryview, numpy array or CPU torch tensor";

std::string TypeName(nb::handle obj) { return nb::type_name(obj.type()).c_str(); }

// Why `obj` was refused as a buffer, for the error message.
std::string Refusal(nb::handle obj, bool writable) {
  if (PyObject_CheckBuffer(obj.ptr())) {
    Py_buffer view;
    if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_RECORDS_RO) == 0) {
      bool contiguous = PyBuffer_IsContiguous(&view, 'A');
      PyBuffer_Release(&view);
      if (!contiguous) return "is not contiguous (pass a contiguous copy or view)";
      if (writable) return "is read-only; a get needs writable memory";
    }
    PyErr_Clear();
  }
  if (nb::hasattr(obj, "__dlpack__")) {
    return "is not a contiguous, CPU-resident DLPack tensor" +
           std::string(writable ? " (writable)" : "");
  }
  return absl::StrCat("has type ", TypeName(obj), "; expected a ", kAccepted);
}

// Calls fn(item, index) for each element of the iterable `objs`; a list or tuple is read
// in place. Each item is held for its call, and the length read again after it, so a
// callee that changes the list (a buffer's __dlpack__) cannot leave a dangling item.
template <typename Fn>
void ForEachItem(nb::handle objs, const char* name, Fn&& fn) {
  const std::string refusal = absl::StrCat(name, " must be a sequence (a list or a tuple)");
  nb::object seq = nb::steal(PySequence_Fast(objs.ptr(), refusal.c_str()));
  if (!seq.is_valid()) throw nb::python_error();
  for (Py_ssize_t i = 0; i < PySequence_Fast_GET_SIZE(seq.ptr()); ++i) {
    nb::object item = nb::borrow(PySequence_Fast_GET_ITEM(seq.ptr(), i));
    fn(item, static_cast<int64_t>(i));
  }
}

bool IsCContiguous(const nb::ndarray<nb::ro>& a) {
  int64_t expected = 1;
  for (size_t i = a.ndim(); i-- > 0;) {
    if (a.shape(i) != 1 && a.stride(i) != expected) return false;
    expected *= static_cast<int64_t>(a.shape(i));
  }
  return true;
}

}  // namespace

std::string ArgName::str() const {
  return index < 0 ? std::string(base) : absl::StrCat(base, "[", index, "]");
}

Buffer Buffer::Borrow(nb::handle obj, bool writable, const ArgName& what) {
  Buffer b;
  if (PyObject_CheckBuffer(obj.ptr())) {
    auto view = std::make_unique<Py_buffer>();
    int flags = PyBUF_ANY_CONTIGUOUS | (writable ? PyBUF_WRITABLE : 0);
    if (PyObject_GetBuffer(obj.ptr(), view.get(), flags) == 0) {
      b.data_ = view->buf;
      b.size_ = static_cast<size_t>(view->len);
      b.view_ = std::move(view);
      return b;
    }
    PyErr_Clear();
    ThrowInvalid(absl::StrCat(what.str(), " ", Refusal(obj, writable)));
  }
  nb::ndarray<nb::ro, nb::device::cpu> ro;
  nb::ndarray<nb::device::cpu> rw;
  bool ok = writable ? nb::try_cast(obj, rw, /*convert=*/false)
                     : nb::try_cast(obj, ro, /*convert=*/false);
  if (ok) b.array_ = writable ? nb::ndarray<nb::ro>(rw) : nb::ndarray<nb::ro>(ro);
  if (!ok || !IsCContiguous(b.array_)) {
    ThrowInvalid(absl::StrCat(what.str(), " ", Refusal(obj, writable)));
  }
  const auto dtype = b.array_.dtype();
  b.data_ = const_cast<void*>(b.array_.data());
  b.size_ = b.array_.size() * ((dtype.bits * dtype.lanes + 7) / 8);
  return b;
}

Buffer::Buffer(Buffer&& other) noexcept
    : data_(other.data_),
      size_(other.size_),
      view_(std::move(other.view_)),
      array_(std::move(other.array_)) {}

Buffer::~Buffer() {
  if (!view_ && !array_.is_valid()) return;
  nb::gil_scoped_acquire gil;
  if (view_) PyBuffer_Release(view_.get());
  array_ = nb::ndarray<nb::ro>();
}

std::vector<Buffer> BorrowAll(nb::handle objs, bool writable) {
  std::vector<Buffer> out;
  ForEachItem(objs, "buffers", [&](nb::handle obj, int64_t i) {
    out.push_back(Buffer::Borrow(obj, writable, ArgName("buffers", i)));
  });
  return out;
}

Key128 ParseKey(nb::handle obj, const ArgName& what) {
  Key128 key;
  if (PyBytes_Check(obj.ptr()) && PyBytes_GET_SIZE(obj.ptr()) == 16) {
    std::memcpy(key.data(), PyBytes_AS_STRING(obj.ptr()), 16);
    return key;
  }
  if (PyUnicode_Check(obj.ptr())) {
    ThrowInvalid(absl::StrCat(what.str(),
                              " is a str; a key is 16 bytes (kvstash.key_from_engine_hash ",
                              "maps any string to one)"));
  }
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    ThrowInvalid(absl::StrCat(what.str(), " has type ", TypeName(obj), "; a key is 16 bytes"));
  }
  const Py_ssize_t len = view.len;
  if (len == 16) std::memcpy(key.data(), view.buf, 16);
  PyBuffer_Release(&view);
  if (len != 16) ThrowInvalid(absl::StrCat(what.str(), " is ", len, " bytes; a key is 16 bytes"));
  return key;
}

std::vector<Key128> ParseKeys(nb::handle objs) {
  std::vector<Key128> keys;
  ForEachItem(objs, "keys", [&](nb::handle obj, int64_t i) {
    keys.push_back(ParseKey(obj, ArgName("keys", i)));
  });
  return keys;
}

nb::bytes KeyBytes(const Key128& key) { return nb::bytes(key.data(), key.size()); }

std::string BytesOrStr(nb::handle obj, const std::string& what) {
  if (PyUnicode_Check(obj.ptr())) {
    Py_ssize_t len = 0;
    const char* utf8 = PyUnicode_AsUTF8AndSize(obj.ptr(), &len);
    if (utf8 == nullptr) {
      PyErr_Clear();
      ThrowInvalid(absl::StrCat(what, " is not valid Unicode"));
    }
    return std::string(utf8, static_cast<size_t>(len));
  }
  Py_buffer view;
  if (PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS) != 0) {
    PyErr_Clear();
    ThrowInvalid(absl::StrCat(what, " has type ", TypeName(obj), "; expected bytes or str"));
  }
  std::string out(static_cast<const char*>(view.buf), static_cast<size_t>(view.len));
  PyBuffer_Release(&view);
  return out;
}

}  // namespace kvstash::python
