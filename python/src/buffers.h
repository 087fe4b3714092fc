// Caller memory borrowed from Python objects for the length of one call: payload buffers
// (buffer protocol or DLPack, never copied) and 16-byte keys.
//
// Thread-safety: a Buffer is owned by one call; its data may be read or written from any
// thread while it lives. Borrow and the key parsers need the GIL; the destructor takes it.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "kvstash/keys.h"
#include "nanobind/nanobind.h"
#include "nanobind/ndarray.h"

namespace kvstash::python {

// An argument's name in error messages ("parent", "keys[3]"), formatted only when an error
// names it: batches of thousands of keys pay nothing for it.
struct ArgName {
  ArgName(const char* base, int64_t index = -1) : base(base), index(index) {}  // NOLINT
  std::string str() const;

  const char* base;
  int64_t index;  // -1: not an element
};

class Buffer {
 public:
  // Borrows the bytes of `obj`: anything with the buffer protocol (bytes, bytearray,
  // memoryview, numpy arrays) or a CPU DLPack producer (torch tensors). The memory must be
  // contiguous; `writable` also requires it to be writable. Throws StatusError
  // (INVALID_ARGUMENT, naming `what`, e.g. "buffers[3]") otherwise.
  static Buffer Borrow(nanobind::handle obj, bool writable, const ArgName& what);

  Buffer(Buffer&& other) noexcept;
  Buffer& operator=(Buffer&&) = delete;
  ~Buffer();

  void* data() const { return data_; }
  size_t size() const { return size_; }

 private:
  Buffer() = default;

  void* data_ = nullptr;
  size_t size_ = 0;
  std::unique_ptr<Py_buffer> view_;        // buffer-protocol borrow, released at the end
  nanobind::ndarray<nanobind::ro> array_;  // DLPack borrow
};

// Borrows every element of the sequence `objs` ("buffers[i]" in errors).
std::vector<Buffer> BorrowAll(nanobind::handle objs, bool writable);

// Parses one key: a bytes-like object of exactly 16 bytes. `what` names it in errors.
Key128 ParseKey(nanobind::handle obj, const ArgName& what);
// Parses a sequence of keys ("keys[i]" in errors).
std::vector<Key128> ParseKeys(nanobind::handle objs);
// The key as a 16-byte bytes object.
nanobind::bytes KeyBytes(const Key128& key);

// Byte string of `obj`: bytes-like as is, str as UTF-8. `what` names it in errors.
std::string BytesOrStr(nanobind::handle obj, const std::string& what);

}  // namespace kvstash::python
