#include "py_namespace.h"

#include <cstring>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "buffers.h"
#include "errors.h"
#include "nanobind/stl/string.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

HashAlgo ParseHashAlgo(const std::string& name) {
  if (name == "xxh3") return HashAlgo::kXxh3_128;
  if (name == "sha256") return HashAlgo::kSha256_128;
  ThrowInvalid(absl::StrCat("hash_algo: expected 'xxh3' or 'sha256', got '", name, "'"));
}

const char* HashAlgoName(HashAlgo algo) {
  return algo == HashAlgo::kSha256_128 ? "sha256" : "xxh3";
}

// Token ids as int32: a buffer of 4-byte ints is read in place; anything else is iterated.
std::vector<int32_t> ParseTokens(nb::handle obj) {
  std::vector<int32_t> tokens;
  Py_buffer view;
  if (PyObject_CheckBuffer(obj.ptr()) &&
      PyObject_GetBuffer(obj.ptr(), &view, PyBUF_C_CONTIGUOUS | PyBUF_FORMAT) == 0) {
    const char* f = view.format != nullptr ? view.format : "B";
    if (*f == '<' || *f == '=' || *f == '@') ++f;
    const bool int32 = view.itemsize == 4 && (*f == 'i' || *f == 'l') && f[1] == '\0';
    if (int32) {
      tokens.resize(static_cast<size_t>(view.len) / 4);
      std::memcpy(tokens.data(), view.buf, tokens.size() * 4);
    }
    PyBuffer_Release(&view);
    if (int32) return tokens;
  }
  PyErr_Clear();
  size_t i = 0;
  for (nb::handle t : obj) {
    long long v = PyLong_AsLongLong(t.ptr());
    if ((v == -1 && PyErr_Occurred()) || v < INT32_MIN || v > INT32_MAX) {
      PyErr_Clear();
      ThrowInvalid(
          absl::StrCat("token_ids[", i, "] is not a 32-bit integer: ", nb::repr(t).c_str()));
    }
    tokens.push_back(static_cast<int32_t>(v));
    ++i;
  }
  return tokens;
}

nb::list KeyList(const std::vector<Key128>& keys) {
  nb::list out;
  for (const Key128& k : keys) out.append(KeyBytes(k));
  return out;
}

}  // namespace

const Namespace& PyNamespace::Checked(const Namespace& spec) {
  ThrowIfError(spec.Validate());
  return spec;
}

PyNamespace::PyNamespace(Namespace spec) : spec_(Checked(spec)), chain_(spec_) {}

void BindNamespace(nb::module_& m) {
  nb::class_<PyNamespace>(m, "Namespace")
      .def(
          "__init__",
          [](PyNamespace* self, const std::string& model, uint32_t num_layers, uint32_t kv_heads,
             uint32_t head_dim, const std::string& dtype, uint32_t chunk_tokens,
             const std::string& tenant, uint32_t tp_rank, uint32_t tp_size,
             const std::string& revision, const std::string& kv_layout,
             const std::string& hash_algo) {
            Namespace spec;
            spec.model_id = model;
            spec.num_layers = num_layers;
            spec.kv_heads = kv_heads;
            spec.head_dim = head_dim;
            spec.dtype = dtype;
            spec.chunk_tokens = chunk_tokens;
            spec.tenant = tenant;
            spec.tp_rank = tp_rank;
            spec.tp_size = tp_size;
            spec.revision = revision;
            spec.kv_layout = kv_layout;
            spec.hash_algo = ParseHashAlgo(hash_algo);
            new (self) PyNamespace(spec);
          },
          nb::kw_only(), nb::arg("model"), nb::arg("num_layers"), nb::arg("kv_heads"),
          nb::arg("head_dim"), nb::arg("dtype") = Namespace{}.dtype,
          nb::arg("chunk_tokens") = Namespace{}.chunk_tokens,
          nb::arg("tenant") = Namespace{}.tenant, nb::arg("tp_rank") = 0u, nb::arg("tp_size") = 1u,
          nb::arg("revision") = "", nb::arg("kv_layout") = Namespace{}.kv_layout,
          nb::arg("hash_algo") = "xxh3")
      .def_prop_ro("id", [](const PyNamespace& n) { return KeyBytes(n.id()); })
      .def_prop_ro("model", [](const PyNamespace& n) { return n.spec().model_id; })
      .def_prop_ro("num_layers", [](const PyNamespace& n) { return n.spec().num_layers; })
      .def_prop_ro("kv_heads", [](const PyNamespace& n) { return n.spec().kv_heads; })
      .def_prop_ro("head_dim", [](const PyNamespace& n) { return n.spec().head_dim; })
      .def_prop_ro("dtype", [](const PyNamespace& n) { return n.spec().dtype; })
      .def_prop_ro("chunk_tokens", [](const PyNamespace& n) { return n.spec().chunk_tokens; })
      .def_prop_ro("tenant", [](const PyNamespace& n) { return n.spec().tenant; })
      .def_prop_ro("tp_rank", [](const PyNamespace& n) { return n.spec().tp_rank; })
      .def_prop_ro("tp_size", [](const PyNamespace& n) { return n.spec().tp_size; })
      .def_prop_ro("revision", [](const PyNamespace& n) { return n.spec().revision; })
      .def_prop_ro("kv_layout", [](const PyNamespace& n) { return n.spec().kv_layout; })
      .def_prop_ro("hash_algo",
                   [](const PyNamespace& n) { return HashAlgoName(n.spec().hash_algo); })
      .def(
          "prefix_keys",
          [](const PyNamespace& n, nb::handle token_ids, nb::handle extra) {
            std::vector<int32_t> tokens = ParseTokens(token_ids);
            std::string e = BytesOrStr(extra, "extra");
            std::vector<Key128> keys;
            {
              nb::gil_scoped_release release;
              keys = n.chain().PrefixKeys(tokens, e);
            }
            return KeyList(keys);
          },
          nb::arg("token_ids"), nb::arg("extra") = nb::bytes(""))
      .def(
          "position_independent_key",
          [](const PyNamespace& n, nb::handle token_ids) {
            return KeyBytes(n.chain().PositionIndependentKey(ParseTokens(token_ids)));
          },
          nb::arg("token_ids"))
      .def(
          "key_from_engine_hash",
          [](const PyNamespace& n, nb::handle x) {
            return KeyBytes(n.chain().FromEngineHash(BytesOrStr(x, "engine_hash")));
          },
          nb::arg("engine_hash"))
      .def(
          "__eq__", [](const PyNamespace& a, const PyNamespace& b) { return a.id() == b.id(); },
          nb::is_operator())
      .def("__hash__",
           [](const PyNamespace& n) {
             int64_t h;
             std::memcpy(&h, n.id().data(), sizeof(h));
             return h;
           })
      .def("__repr__", [](const PyNamespace& n) {
        const Namespace& s = n.spec();
        return absl::StrCat("Namespace(model='", s.model_id, "', tenant='", s.tenant,
                            "', num_layers=", s.num_layers, ", kv_heads=", s.kv_heads,
                            ", head_dim=", s.head_dim, ", dtype='", s.dtype,
                            "', chunk_tokens=", s.chunk_tokens, ", tp_rank=", s.tp_rank,
                            ", tp_size=", s.tp_size, ", id=", KeyToHex(n.id()), ")");
      });

  m.def(
      "key_from_engine_hash",
      [](nb::handle x) { return KeyBytes(EngineHashKey(BytesOrStr(x, "engine_hash"))); },
      nb::arg("engine_hash"));
}

}  // namespace kvstash::python
