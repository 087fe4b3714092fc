// Writes the seed corpus and dictionaries of the fuzz targets under DIR (the source tree's
// tests/fuzz): DIR/corpus/<target>/<name> and DIR/<target>.dict. Seeds are built with the
// real encoders so that they stay valid messages as the formats evolve:
//   build-fuzz/tests/fuzz/fuzz_corpus_gen tests/fuzz
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"
#include "cluster/member.h"
#include "fuzz_util.h"
#include "kvstash/v1/kvstash.pb.h"
#include "proto/frame_codec.h"
#include "proto/namespace_spec.h"
#include "proto/ucx_wire.h"
#include "server/config.h"
#include "server/config_file.h"

namespace kvstash::fuzz {
namespace {

namespace ucx = wire::ucx;

std::string g_dir;

void Write(const std::string& target, const std::string& name, const std::string& bytes) {
  const std::string dir = absl::StrCat(g_dir, "/corpus/", target);
  std::filesystem::create_directories(dir);
  std::ofstream(absl::StrCat(dir, "/", name), std::ios::binary) << bytes;
}

std::string NamespaceId() { return KeyToBytes(wire::NamespaceFromProto(CorpusNamespace()).Id()); }

// One leading byte of a fuzz input (a selector); a string literal would stop at "\x00".
std::string Tag(int c) { return std::string(1, static_cast<char>(c)); }

std::string Key(char c) { return std::string(16, c); }

template <typename T>
std::string Bytes(const T& v) {
  return std::string(reinterpret_cast<const char*>(&v), sizeof(v));
}

// A u16 little-endian length and the bytes (fuzz_util.h Records).
std::string Record(const std::string& bytes) {
  const uint16_t n = static_cast<uint16_t>(bytes.size());
  return Bytes(n) + bytes;
}

v1::ChunkHeader Header(char key, uint64_t size) {
  v1::ChunkHeader h;
  h.set_key(Key(key));
  h.set_size_bytes(size);
  h.set_tokens(16);
  h.set_format(1);
  return h;
}

std::string PutFrameBytes(bool with_ns, const v1::ChunkHeader* header, size_t payload) {
  v1::PutFrame f;
  if (with_ns) f.set_namespace_id(NamespaceId());
  if (header != nullptr) *f.mutable_header() = *header;
  grpc::Slice data(std::string(payload, 'p'));
  return Flatten(wire::EncodeFrame(f, absl::MakeConstSpan(&data, payload > 0 ? 1 : 0)));
}

void FrameCodec() {
  v1::ChunkHeader h = Header('a', 48);
  Write("frame_codec_fuzz", "put_first", Tag(0x02) + PutFrameBytes(true, &h, 32));
  Write("frame_codec_fuzz", "put_data", Tag(0x00) + PutFrameBytes(false, nullptr, 16));
  v1::GetFrame g;
  g.set_index(3);
  *g.mutable_header() = Header('b', 20);
  g.mutable_header()->mutable_hints()->set_session_id(9);
  grpc::Slice data(std::string(20, 'g'));
  Write("frame_codec_fuzz", "get_head", Tag(0x13) + Flatten(wire::EncodeFrame(g, {&data, 1})));
  v1::GetFrame miss;
  miss.set_index(1);
  miss.set_code(5);
  Write("frame_codec_fuzz", "get_miss", Tag(0x10) + Flatten(wire::EncodeFrame(miss, {})));
}

void PutStream() {
  v1::ChunkHeader a = Header('a', 40), b = Header('b', 8);
  v1::ChunkHints* hints = b.mutable_hints();
  hints->set_parent_key(Key('a'));
  hints->set_session_id(7);
  hints->set_ttl_ms(1000);
  hints->set_priority(v1::Priority(2));
  hints->set_pin(true);
  Write("put_stream_fuzz", "two_chunks",
        Record(Tag(0x01) + PutFrameBytes(true, &a, 24)) +
            Record(Tag(0x02) + PutFrameBytes(false, nullptr, 16)) +
            Record(Tag(0x00) + PutFrameBytes(false, &b, 8)));
  Write("put_stream_fuzz", "ns_then_chunk",
        Record(Tag(0x00) + PutFrameBytes(true, nullptr, 0)) +
            Record(Tag(0x03) + PutFrameBytes(false, &a, 40)));
  Write("put_stream_fuzz", "truncated", Record(Tag(0x00) + PutFrameBytes(true, &a, 10)));
}

void GetRequest() {
  v1::GetRequest req;
  req.set_namespace_id(NamespaceId());
  req.set_keys(Key('a') + Key('b') + Key('c'));
  req.set_lease_id(42);
  Write("get_request_fuzz", "three_keys", Tag(0x02) + req.SerializeAsString());
  req.clear_keys();
  req.clear_lease_id();
  Write("get_request_fuzz", "no_keys", Tag(0x00) + req.SerializeAsString());
}

std::string UcxMessage(const std::string& header, const std::string& body) {
  return std::string(1, static_cast<char>(header.size())) + header + body;
}

void UcxRequests() {
  const std::string ns = NamespaceId();
  const auto* ns_bytes = reinterpret_cast<const uint8_t*>(ns.data());
  const std::string t = "ucx_request_fuzz";
  auto header = [&](ucx::Op op, uint16_t flags) {
    ucx::RequestHeader h = ucx::MakeRequestHeader(op, 77, ns_bytes);
    h.flags = flags;
    return Bytes(h);
  };
  ucx::PutFields put{};
  std::memcpy(put.key, Key('k').data(), sizeof(put.key));
  put.size_bytes = 24;
  put.tokens = 16;
  put.count = 1;
  Write(t, "put", UcxMessage(header(ucx::Op::kPut, 0) + Bytes(put), std::string(24, 'p')));
  ucx::PutHintsFields hints{};
  std::memcpy(hints.parent_key, Key('j').data(), sizeof(hints.parent_key));
  hints.session_id = 5;
  hints.ttl_ms = 1000;
  hints.priority = 1;
  hints.hint_flags = ucx::kHintHasParent | ucx::kHintPin;
  Write(t, "put_hints",
        UcxMessage(header(ucx::Op::kPut, ucx::kFlagPutHints) + Bytes(put) + Bytes(hints),
                   std::string(24, 'p')));
  Write(t, "put_direct", UcxMessage(header(ucx::Op::kPut, ucx::kFlagDirect) + Bytes(put), ""));
  ucx::GetFields get{0, 2, 0};
  ucx::GetItemRecord rec{};
  rec.capacity = 1 << 20;
  Write(t, "get", UcxMessage(header(ucx::Op::kGet, 0) + Bytes(get), Bytes(rec) + Bytes(rec)));
  ucx::CommitFields commit{3, 0, 0};
  Write(t, "commit", UcxMessage(header(ucx::Op::kCommit, 0) + Bytes(commit), ""));
  Write(t, "release", UcxMessage(header(ucx::Op::kRelease, 0), ""));
  Write(t, "hello", UcxMessage(Bytes(ucx::MakeRequestHeader(ucx::Op::kHello, 1, nullptr)), ""));
  Write(t, "hello_token",
        UcxMessage(Bytes(ucx::MakeRequestHeader(ucx::Op::kHello, 1, nullptr)),
                   ucx::EncodeHello("kvs_0123456789abcdefghijklmnopqrstuvwxyzABCDEFG")));
  const uint64_t token = 0x1234;
  Write(t, "attach",
        UcxMessage(header(ucx::Op::kAttach, ucx::kFlagPeerErrorHandling | ucx::kFlagDirect),
                   Bytes(token) + "worker-address"));
  v1::RegisterNamespaceRequest reg;
  *reg.mutable_spec() = CorpusNamespace();
  Write(t, "register", UcxMessage(header(ucx::Op::kRegisterNamespace, 0), reg.SerializeAsString()));
  v1::LookupRequest lookup;
  lookup.set_namespace_id(ns);
  lookup.set_keys(Key('a') + Key('b'));
  lookup.set_lease_ms(100);
  Write(t, "lookup", UcxMessage(header(ucx::Op::kLookup, 0), lookup.SerializeAsString()));
  v1::KeysRequest keys;
  keys.set_namespace_id(ns);
  keys.set_keys(Key('a'));
  Write(t, "exists", UcxMessage(header(ucx::Op::kExists, 0), keys.SerializeAsString()));
  Write(t, "health", UcxMessage(header(ucx::Op::kHealth, 0), ""));
  ucx::ReplyHeader reply = ucx::MakeReplyHeader(static_cast<uint8_t>(ucx::Op::kHello), 1);
  const ucx::HelloReply hello{99, 256 << 10};
  Write(t, "hello_reply", UcxMessage(Bytes(reply), ucx::EncodeHelloReply(hello, "worker")));
}

void Config() {
  Write("config_fuzz", "default", server::DefaultConfigYaml());
  Write("config_fuzz", "small",
        "server:\n  grpc_listen: \"[::]:0\"\n  max_keys_per_request: 128\nstorage:\n  dram:\n"
        "    capacity_bytes: 64MiB\n  nvme:\n    enabled: false\nucx:\n  enabled: false\n");
  Write("config_fuzz", "overrides",
        std::string("log:\n  level: debug\n") + '\0' + "storage.dram.eviction=s3fifo" + '\0' +
            "!server.grpc_listen=[::]:7070");
  // Every key the daemon knows, as the dictionary (one entry per distinct key name).
  std::set<std::string> words;
  for (absl::string_view line : absl::StrSplit(server::EmitConfig(server::ServerConfig{}), '\n')) {
    line = absl::StripLeadingAsciiWhitespace(line);
    const size_t colon = line.find(':');
    if (colon == absl::string_view::npos || colon == 0 || line[0] == '#') continue;
    words.insert(std::string(line.substr(0, colon + 1)));
  }
  std::string dict = "# Config keys (fuzz_corpus_gen) and YAML syntax.\n";
  for (const std::string& w : words) absl::StrAppend(&dict, "\"", w, "\"\n");
  for (const char* w :
       {"\\x0a  ", "- ",  "[",   "]",   "{",    "}",     "&a",   "*a", "!!str", "\\x22",
        "'",       "GiB", "MiB", "KiB", "true", "false", "null", "~",  "|",     ">"}) {
    absl::StrAppend(&dict, "\"", w, "\"\n");
  }
  std::ofstream(absl::StrCat(g_dir, "/config_fuzz.dict")) << dict;
}

void Namespaces() {
  const std::string t = "namespace_fuzz";
  Write(t, "id", Tag(0x00) + NamespaceId());
  Write(t, "spec", Tag(0x01) + CorpusNamespace().SerializeAsString());
  v1::NamespaceSpec sha = CorpusNamespace();
  sha.set_hash_algo(2);
  sha.set_tp_size(2);
  sha.set_tp_rank(1);
  sha.set_revision("abc");
  sha.set_dtype("bf16");
  Write(t, "spec_sha256", Tag(0x01) + sha.SerializeAsString());
  Write(t, "keys", Tag(0x02) + Key('a') + Key('b'));
  Write(t, "hex", Tag(0x03) + KeyToHex(wire::NamespaceFromProto(CorpusNamespace()).Id()));
}

void TokenFile() {
  Write("token_file_fuzz", "two_principals",
        "principals:\n"
        "  - name: team-a\n"
        "    token_sha256:\n"
        "      - 9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08\n"
        "    read: [team-a, shared]\n"
        "    write: [team-a]\n"
        "    calls_per_s: 500\n"
        "    bytes_per_s: 2GiB\n"
        "    max_concurrent_calls: 64\n"
        "  - name: ops\n"
        "    token_sha256: [60303ae22b998861bce3b28f33eec1be758a213c86c93c076dbe9f558c11c752]\n"
        "    admin: [\"*\"]\n"
        "    trusted: true\n"
        "anonymous:\n"
        "  read: [shared]\n");
}

void Members() {
  cluster::Member m;
  m.id = "node-a.zone1";
  m.grpc_address = "10.0.0.7:7070";
  m.ucx_address = "[fd00::7]:7072";
  m.zone = "rack-3";
  m.tiers = {{"dram", 64ull << 30}, {"nvme", 2ull << 40}};
  m.started_unix_ms = 1795000000000;
  Write("member_json_fuzz", "full", cluster::MemberToJson(m));
  cluster::Member minimal;
  minimal.id = "m0";
  Write("member_json_fuzz", "minimal", cluster::MemberToJson(minimal));
}

}  // namespace
}  // namespace kvstash::fuzz

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s TESTS_FUZZ_DIR\n", argv[0]);
    return 2;
  }
  kvstash::fuzz::g_dir = argv[1];
  kvstash::fuzz::FrameCodec();
  kvstash::fuzz::PutStream();
  kvstash::fuzz::GetRequest();
  kvstash::fuzz::UcxRequests();
  kvstash::fuzz::Config();
  kvstash::fuzz::Namespaces();
  kvstash::fuzz::TokenFile();
  kvstash::fuzz::Members();
  return 0;
}
