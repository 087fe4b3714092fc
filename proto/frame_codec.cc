#include "proto/frame_codec.h"

#include <cstdint>
#include <string>

namespace kvstash::wire {
namespace {

constexpr uint32_t kWireVarint = 0, kWireFixed64 = 1, kWireLen = 2, kWireFixed32 = 5;

size_t PutVarint(uint64_t v, uint8_t* out) {
  size_t n = 0;
  while (v >= 0x80) {
    out[n++] = static_cast<uint8_t>(v | 0x80);
    v >>= 7;
  }
  out[n++] = static_cast<uint8_t>(v);
  return n;
}

// Reads a frame that arrives as several slices as one byte sequence.
class SliceReader {
 public:
  explicit SliceReader(const std::vector<grpc::Slice>& slices) : slices_(slices) { Skip0(); }

  bool done() const { return idx_ == slices_.size(); }

  bool ReadByte(uint8_t* b) {
    if (done()) return false;
    *b = slices_[idx_].begin()[off_];
    Advance(1);
    return true;
  }

  // Reads a varint of at most `max_bytes` bytes (10 hold 64 bits).
  bool ReadVarint(uint64_t* v, int max_bytes = 10) {
    *v = 0;
    for (int i = 0, shift = 0; i < max_bytes; ++i, shift += 7) {
      uint8_t b;
      if (!ReadByte(&b)) return false;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return true;
    }
    return false;
  }

  // Moves `n` bytes forward; with `out`, appends them as sub-slices (no copy) or, with
  // `copy`, as bytes.
  bool Take(uint64_t n, std::vector<grpc::Slice>* out, std::string* copy) {
    while (n > 0) {
      if (done()) return false;
      const grpc::Slice& s = slices_[idx_];
      size_t step = std::min<uint64_t>(n, s.size() - off_);
      if (out != nullptr) out->push_back(s.sub(off_, off_ + step));
      if (copy != nullptr) copy->append(reinterpret_cast<const char*>(s.begin()) + off_, step);
      Advance(step);
      n -= step;
    }
    return true;
  }

 private:
  void Advance(size_t n) {
    off_ += n;
    if (off_ == slices_[idx_].size()) {
      ++idx_;
      off_ = 0;
      Skip0();
    }
  }
  void Skip0() {
    while (idx_ < slices_.size() && slices_[idx_].size() == 0) ++idx_;
  }

  const std::vector<grpc::Slice>& slices_;
  size_t idx_ = 0;
  size_t off_ = 0;
};

// A length-delimited field's length as protobuf reads it: a varint of at most 5 bytes whose
// value fits an int32 (a longer one, even an overlong zero, fails its parser).
bool ReadLength(SliceReader* r, uint64_t* len) {
  return r->ReadVarint(len, 5) && *len <= INT32_MAX;
}

// Copies the value of a non-payload field (its tag is already in `head`) into `head`.
bool CopyField(uint32_t wire_type, SliceReader* r, std::string* head) {
  uint8_t buf[10];
  uint64_t v;
  switch (wire_type) {
    case kWireVarint:
      if (!r->ReadVarint(&v)) return false;
      head->append(reinterpret_cast<char*>(buf), PutVarint(v, buf));
      return true;
    case kWireFixed64:
      return r->Take(8, nullptr, head);
    case kWireFixed32:
      return r->Take(4, nullptr, head);
    case kWireLen:
      if (!ReadLength(r, &v)) return false;
      head->append(reinterpret_cast<char*>(buf), PutVarint(v, buf));
      return r->Take(v, nullptr, head);
    default:  // groups are not used by kvstash messages
      return false;
  }
}

absl::Status Malformed(const char* what) {
  return absl::InvalidArgumentError(std::string("malformed frame: ") + what);
}

}  // namespace

grpc::ByteBuffer EncodeFrame(const google::protobuf::MessageLite& head,
                             absl::Span<const grpc::Slice> payload) {
  std::string bytes = head.SerializeAsString();
  size_t total = 0;
  for (const grpc::Slice& s : payload) total += s.size();
  std::vector<grpc::Slice> slices;
  slices.reserve(payload.size() + 1);
  if (total > 0 || !payload.empty()) {
    uint8_t buf[16];
    size_t n = PutVarint((kDataField << 3) | kWireLen, buf);
    n += PutVarint(total, buf + n);
    bytes.append(reinterpret_cast<char*>(buf), n);
  }
  slices.emplace_back(bytes);
  slices.insert(slices.end(), payload.begin(), payload.end());
  return grpc::ByteBuffer(slices.data(), slices.size());
}

absl::Status DecodeFrame(const grpc::ByteBuffer& frame, google::protobuf::MessageLite* head,
                         FramePayload* payload) {
  payload->slices.clear();
  payload->bytes = 0;
  std::vector<grpc::Slice> slices;
  if (!frame.Valid() || !frame.Dump(&slices).ok()) return Malformed("unreadable buffer");
  SliceReader reader(slices);
  std::string head_bytes;
  bool seen_data = false;
  while (!reader.done()) {
    uint64_t tag;
    // A tag is a varint of at most 5 bytes holding 32 bits, as protobuf reads it; protobuf
    // keeps a wider tag's low 32 bits, which would name another field there.
    if (!reader.ReadVarint(&tag, 5) || (tag >> 3) == 0 || tag > UINT32_MAX) {
      return Malformed("bad tag");
    }
    uint32_t wire_type = tag & 7;
    if ((tag >> 3) == kDataField && wire_type == kWireLen) {
      if (seen_data) return Malformed("repeated data field");
      seen_data = true;
      uint64_t len;
      if (!ReadLength(&reader, &len) || !reader.Take(len, &payload->slices, nullptr)) {
        return Malformed("truncated data field");
      }
      payload->bytes = len;
      continue;
    }
    uint8_t buf[10];
    head_bytes.append(reinterpret_cast<char*>(buf), PutVarint(tag, buf));
    if (!CopyField(wire_type, &reader, &head_bytes)) return Malformed("truncated field");
  }
  if (!head->ParseFromString(head_bytes)) return Malformed("bad message fields");
  return absl::OkStatus();
}

absl::Status ParseMessage(const grpc::ByteBuffer& buffer, google::protobuf::MessageLite* msg) {
  std::vector<grpc::Slice> slices;
  if (!buffer.Valid() || !buffer.Dump(&slices).ok()) {
    return absl::InvalidArgumentError("unreadable request");
  }
  std::string bytes;
  for (const grpc::Slice& s : slices) {
    bytes.append(reinterpret_cast<const char*>(s.begin()), s.size());
  }
  if (!msg->ParseFromString(bytes)) return absl::InvalidArgumentError("malformed request");
  return absl::OkStatus();
}

grpc::ByteBuffer SerializeMessage(const google::protobuf::MessageLite& msg) {
  grpc::Slice slice(msg.SerializeAsString());
  return grpc::ByteBuffer(&slice, 1);
}

}  // namespace kvstash::wire
