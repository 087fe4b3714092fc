// Fuzzes the Put stream's grammar (server/grpc/put_stream.h): what the daemon does with the
// frames of a Put call before any chunk reaches the store. Input: records (fuzz_util.h
// Records) each of one byte giving the number of slices and then one frame's bytes.
// Checks: chunks start only after the namespace and never overlap, each chunk's payload
// adds up to its size_bytes exactly, and the parser's counters agree with what it handed
// out.
#include <cstddef>
#include <cstdint>
#include <string>

#include "fuzz_util.h"
#include "server/grpc/put_stream.h"
#include "server/namespace_registry.h"

namespace kvstash::fuzz {
namespace {

// Records what the parser hands out and checks it as it comes.
class CheckingSink final : public server::PutStreamSink {
 public:
  CheckingSink(const server::NamespaceRegistry* registry, const server::ServiceLimits& limits)
      : registry_(registry), limits_(limits) {}

  absl::Status OnNamespace(absl::string_view id) override {
    FUZZ_CHECK(!have_ns_);
    absl::StatusOr<Key128> ns = registry_->Resolve(id);
    if (!ns.ok()) return ns.status();
    have_ns_ = true;
    return absl::OkStatus();
  }
  void OnChunkStart(const server::PutChunkHeader& header) override {
    FUZZ_CHECK(have_ns_ && !active_);
    FUZZ_CHECK(server::CheckPutChunk(header, limits_).ok());
    FUZZ_CHECK(header.index == chunks_);
    active_ = true;
    size_ = header.meta.size_bytes;
    got_ = 0;
  }
  void OnChunkPayload(absl::Span<const grpc::Slice> slices) override {
    FUZZ_CHECK(active_);
    for (const grpc::Slice& s : slices) got_ += s.size();
    FUZZ_CHECK(got_ <= size_);
  }
  void OnChunkEnd() override {
    FUZZ_CHECK(active_ && got_ == size_);
    active_ = false;
    ++chunks_;
    bytes_ += size_;
  }

  bool active() const { return active_; }
  uint32_t chunks() const { return chunks_; }
  uint64_t bytes() const { return bytes_ + (active_ ? got_ : 0); }

 private:
  const server::NamespaceRegistry* const registry_;
  const server::ServiceLimits limits_;
  bool have_ns_ = false;
  bool active_ = false;
  uint64_t size_ = 0;
  uint64_t got_ = 0;
  uint32_t chunks_ = 0;
  uint64_t bytes_ = 0;
};

}  // namespace
}  // namespace kvstash::fuzz

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  kvstash::fuzz::QuietProtobuf();
  using namespace kvstash;
  const server::NamespaceRegistry* registry = &fuzz::CorpusRegistry();
  server::ServiceLimits limits;
  limits.max_frame_bytes = 4096;  // small, so that inputs reach the limits
  limits.max_keys_per_request = 8;
  limits.max_ttl_ms = 60000;
  fuzz::CheckingSink sink(registry, limits);
  server::PutStreamParser parser(limits, &sink);
  absl::Status status;
  for (absl::string_view record :
       fuzz::Records(absl::string_view(reinterpret_cast<const char*>(data), size))) {
    if (record.empty()) continue;
    status = parser.OnFrame(fuzz::ToBuffer(record.substr(1), static_cast<uint8_t>(record[0]) % 8));
    if (!status.ok()) break;  // the reactor ends the call at the first error
    FUZZ_CHECK(parser.chunks_done() == sink.chunks());
    FUZZ_CHECK(parser.bytes_received() == sink.bytes());
  }
  if (status.ok()) FUZZ_CHECK(parser.OnEnd().ok() == !sink.active());
  return 0;
}
