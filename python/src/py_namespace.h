// kvstash._native.Namespace: a namespace spec (docs/keys.md) with its KeyChain, so Python
// derives keys with the same code as every other client.
//
// Thread-safety: immutable after construction; safe from many threads.
#pragma once

#include <string>

#include "kvstash/keys.h"
#include "nanobind/nanobind.h"

namespace kvstash::python {

class PyNamespace {
 public:
  // Throws StatusError (INVALID_ARGUMENT naming the field) for an invalid spec.
  explicit PyNamespace(Namespace spec);

  const Namespace& spec() const { return spec_; }
  const Key128& id() const { return chain_.namespace_id(); }
  const KeyChain& chain() const { return chain_; }

 private:
  static const Namespace& Checked(const Namespace& spec);

  Namespace spec_;
  KeyChain chain_;
};

void BindNamespace(nanobind::module_& m);

}  // namespace kvstash::python
