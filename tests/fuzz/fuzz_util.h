// Helpers shared by the libFuzzer targets of this folder: turning the fuzzer's bytes into
// the buffers a decoder receives, a registry with one known namespace, and the check that
// makes a broken invariant a crash libFuzzer reports.
//
// Thread-safety: plain functions; each target runs single-threaded.
#pragma once

#include <google/protobuf/stubs/logging.h>
#include <grpcpp/support/byte_buffer.h>
#include <grpcpp/support/slice.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/string_view.h"
#include "kvstash/keys.h"
#include "kvstash/v1/kvstash.pb.h"
#include "server/namespace_registry.h"

// Aborts with the failed condition: libFuzzer saves the input as a crash artifact.
#define FUZZ_CHECK(cond)                                                                \
  do {                                                                                  \
    if (!(cond)) {                                                                      \
      std::fprintf(stderr, "%s:%d: invariant failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                     \
    }                                                                                   \
  } while (0)

namespace kvstash::fuzz {

// Silences protobuf's log lines (e.g. on invalid UTF-8 in a string field): a refused input
// is expected, and logging each one slows the fuzzer down.
inline void QuietProtobuf() {
  static const bool quiet = [] {
    google::protobuf::SetLogHandler(nullptr);
    return true;
  }();
  (void)quiet;
}

// `bytes` as a buffer of `pieces` slices (at least one) of about equal size, as gRPC may
// hand a message over in pieces.
inline grpc::ByteBuffer ToBuffer(absl::string_view bytes, size_t pieces) {
  if (pieces == 0) pieces = 1;
  std::vector<grpc::Slice> slices;
  const size_t step = bytes.size() / pieces + 1;
  for (size_t i = 0; i < bytes.size(); i += step) {
    slices.emplace_back(bytes.data() + i, std::min(step, bytes.size() - i));
  }
  if (slices.empty()) slices.emplace_back();
  return grpc::ByteBuffer(slices.data(), slices.size());
}

inline std::string Flatten(const std::vector<grpc::Slice>& slices) {
  std::string out;
  for (const grpc::Slice& s : slices)
    out.append(reinterpret_cast<const char*>(s.begin()), s.size());
  return out;
}

inline std::string Flatten(const grpc::ByteBuffer& buffer) {
  std::vector<grpc::Slice> slices;
  FUZZ_CHECK(buffer.Dump(&slices).ok());
  return Flatten(slices);
}

// Splits the input into records of a u16 little-endian length and that many bytes; the
// last record takes what is left when its length runs past the end.
inline std::vector<absl::string_view> Records(absl::string_view in) {
  std::vector<absl::string_view> out;
  while (in.size() >= 2) {
    const size_t len = static_cast<uint8_t>(in[0]) | static_cast<uint8_t>(in[1]) << 8;
    in.remove_prefix(2);
    out.push_back(in.substr(0, len));
    in.remove_prefix(out.back().size());
  }
  return out;
}

// The namespace every corpus message names; its id is what the targets' registries know.
inline v1::NamespaceSpec CorpusNamespace() {
  v1::NamespaceSpec spec;
  spec.set_tenant("fuzz");
  spec.set_model_id("org/model");
  spec.set_dtype("fp16");
  spec.set_tp_size(1);
  spec.set_num_layers(2);
  spec.set_kv_heads(2);
  spec.set_head_dim(64);
  spec.set_chunk_tokens(16);
  return spec;
}

// A registry that knows CorpusNamespace(), built once per process (targets linking the
// server core only).
inline const server::NamespaceRegistry& CorpusRegistry() {
  static const server::NamespaceRegistry* registry = [] {
    auto* r = new server::NamespaceRegistry;
    FUZZ_CHECK(r->Register(CorpusNamespace()).ok());
    return r;
  }();
  return *registry;
}

}  // namespace kvstash::fuzz
