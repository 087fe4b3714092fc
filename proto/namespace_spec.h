// Conversion between kvstash::Namespace and its wire form, kvstash.v1.NamespaceSpec: the one
// place both the client (RegisterNamespace) and the daemon (the registry) use.
//
// Thread-safety: stateless functions; safe from any thread.
#pragma once

#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.pb.h"

namespace kvstash::wire {

// hash_algo 0 (unset on the wire) reads as XXH3-128, the default. Does not validate.
Namespace NamespaceFromProto(const v1::NamespaceSpec& spec);
v1::NamespaceSpec NamespaceToProto(const Namespace& ns);

}  // namespace kvstash::wire
