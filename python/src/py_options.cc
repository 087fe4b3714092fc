#include "py_options.h"

#include <map>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "errors.h"
#include "kvstash/client_options_schema.h"
#include "nanobind/stl/string.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

// The options as a dict, a section as a nested dict.
class ToDict : public OptionSections {
 public:
  nb::dict out;

  void Begin(const char* section, const char* doc) {
    OptionSections::Begin(section, doc);
    out[section] = nb::dict();
  }
  template <typename T>
  void Int(const char* name, T* field, OptionRange, const char*) {
    Current()[name] = *field;
  }
  void Bool(const char* name, bool* field, const char*) { Current()[name] = *field; }
  void String(const char* name, std::string* field, const char*) { Current()[name] = *field; }
  void Choice(const char* name, std::string* field, OptionChoices, const char*) {
    Current()[name] = *field;
  }

 private:
  nb::dict Current() {
    return open().empty() ? out : nb::borrow<nb::dict>(out[open().back().c_str()]);
  }
};

// Sets each field whose dotted name `values` holds, taking it out of `values`.
class FromValues : public OptionSections {
 public:
  explicit FromValues(std::map<std::string, nb::handle>* values) : values_(*values) {}

  std::vector<std::string> names;  // every field's dotted name, in schema order

  template <typename T>
  void Int(const char* name, T* field, OptionRange, const char*) {
    nb::handle v = Take(name);
    if (!v.is_valid()) return;
    // Any integer (numpy's too, through __index__), but not a bool.
    if (PyBool_Check(v.ptr()) || !PyIndex_Check(v.ptr())) WrongType(name, "int", v);
    try {
      *field = nb::cast<T>(nb::steal(PyNumber_Index(v.ptr())));
    } catch (const nb::cast_error&) {
      ThrowInvalid(
          absl::StrCat("client option ", Dotted(name), ": ", nb::repr(v).c_str(), " does not fit"));
    }
  }
  void Bool(const char* name, bool* field, const char*) {
    nb::handle v = Take(name);
    if (!v.is_valid()) return;
    if (!PyBool_Check(v.ptr())) WrongType(name, "bool", v);
    *field = v.ptr() == Py_True;
  }
  void String(const char* name, std::string* field, const char*) {
    nb::handle v = Take(name);
    if (!v.is_valid()) return;
    if (!PyUnicode_Check(v.ptr())) WrongType(name, "str", v);
    *field = nb::cast<std::string>(v);
  }
  void Choice(const char* name, std::string* field, OptionChoices, const char* doc) {
    String(name, field, doc);
  }

 private:
  nb::handle Take(const char* name) {
    names.push_back(Dotted(name));
    auto it = values_.find(names.back());
    if (it == values_.end()) return nb::handle();
    nb::handle v = it->second;
    values_.erase(it);
    return v;
  }
  [[noreturn]] void WrongType(const char* name, const char* expected, nb::handle v) const {
    ThrowInvalid(absl::StrCat("client option ", Dotted(name), ": expected ", expected, ", got ",
                              nb::type_name(v.type()).c_str(), " ", nb::repr(v).c_str()));
  }

  std::map<std::string, nb::handle>& values_;
};

}  // namespace

ClientOptions OptionsFromKwargs(const nb::dict& kwargs) {
  // The keyword arguments by dotted name; `cluster` holds a dict of its fields.
  std::map<std::string, nb::handle> values;
  for (auto [key, value] : kwargs) {
    const std::string name = nb::cast<std::string>(key);
    if (name != "cluster") {
      values[name] = value;
      continue;
    }
    if (!nb::isinstance<nb::dict>(value)) {
      ThrowInvalid(absl::StrCat("client option cluster: expected a kvstash.ClusterOptions, got ",
                                nb::type_name(value.type()).c_str()));
    }
    for (auto [field, v] : nb::borrow<nb::dict>(value)) {
      values[absl::StrCat("cluster.", nb::cast<std::string>(field))] = v;
    }
  }
  ClientOptions options;
  FromValues set(&values);
  VisitClientOptions(options, set);
  if (!values.empty()) {
    ThrowInvalid(absl::StrCat("unknown client option '", values.begin()->first,
                              "' (known: ", absl::StrJoin(set.names, ", "), ")"));
  }
  ThrowIfError(options.Validate());
  return options;
}

nb::dict DefaultOptions() {
  ClientOptions defaults;
  ToDict dict;
  VisitClientOptions(defaults, dict);
  return dict.out;
}

}  // namespace kvstash::python
