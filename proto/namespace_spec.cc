#include "proto/namespace_spec.h"

namespace kvstash::wire {

Namespace NamespaceFromProto(const v1::NamespaceSpec& spec) {
  Namespace ns;
  ns.tenant = spec.tenant();
  ns.model_id = spec.model_id();
  ns.revision = spec.revision();
  ns.dtype = spec.dtype();
  ns.kv_layout = spec.kv_layout();
  ns.num_layers = spec.num_layers();
  ns.kv_heads = spec.kv_heads();
  ns.head_dim = spec.head_dim();
  ns.tp_rank = spec.tp_rank();
  ns.tp_size = spec.tp_size();
  ns.chunk_tokens = spec.chunk_tokens();
  ns.hash_algo = spec.hash_algo() == 0 ? HashAlgo::kXxh3_128 : HashAlgo(spec.hash_algo());
  return ns;
}

v1::NamespaceSpec NamespaceToProto(const Namespace& ns) {
  v1::NamespaceSpec spec;
  spec.set_tenant(ns.tenant);
  spec.set_model_id(ns.model_id);
  spec.set_revision(ns.revision);
  spec.set_dtype(ns.dtype);
  spec.set_kv_layout(ns.kv_layout);
  spec.set_num_layers(ns.num_layers);
  spec.set_kv_heads(ns.kv_heads);
  spec.set_head_dim(ns.head_dim);
  spec.set_tp_rank(ns.tp_rank);
  spec.set_tp_size(ns.tp_size);
  spec.set_chunk_tokens(ns.chunk_tokens);
  spec.set_hash_algo(static_cast<uint32_t>(ns.hash_algo));
  return spec;
}

}  // namespace kvstash::wire
