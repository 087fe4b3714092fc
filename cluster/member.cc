#include "cluster/member.h"

#include <google/protobuf/util/json_util.h>

#include <algorithm>
#include <map>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "cluster/member_record.pb.h"
#include "common/host_port.h"

namespace kvstash::cluster {
namespace {

constexpr size_t kMaxMemberIdChars = 128;
constexpr size_t kMaxClusterNameChars = 64;

// 1..max_chars characters of [A-Za-z0-9._-]: safe in an etcd key, a metric label and a
// file name.
absl::Status ValidateToken(absl::string_view what, absl::string_view value, size_t max_chars) {
  if (value.empty() || value.size() > max_chars) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " \"", value, "\": must be 1 to ", max_chars, " characters"));
  }
  for (char c : value) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '_' && c != '-') {
      return absl::InvalidArgumentError(absl::StrCat(what, " \"", absl::CHexEscape(value),
                                                     "\": only letters, digits, '.', '_' and '-'"));
    }
  }
  return absl::OkStatus();
}

// `s` as a JSON string literal.
void AppendJsonString(std::string* out, absl::string_view s) {
  out->push_back('"');
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '"' || c == '\\') {
      out->push_back('\\');
      out->push_back(c);
    } else if (u < 0x20) {
      absl::StrAppendFormat(out, "\\u%04x", u);
    } else {
      out->push_back(c);
    }
  }
  out->push_back('"');
}

// Whether `s` is well-formed UTF-8 (RFC 3629: no overlong forms, surrogates or code points
// past U+10FFFF), as protobuf's JSON reader demands.
bool IsUtf8(absl::string_view s) {
  size_t i = 0;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    size_t extra = 0;
    unsigned char lo = 0x80;
    unsigned char hi = 0xbf;  // range of the byte after the lead one
    if (c < 0x80) {
      ++i;
      continue;
    } else if (c >= 0xc2 && c <= 0xdf) {
      extra = 1;
    } else if (c >= 0xe0 && c <= 0xef) {
      extra = 2;
      if (c == 0xe0) lo = 0xa0;
      if (c == 0xed) hi = 0x9f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      extra = 3;
      if (c == 0xf0) lo = 0x90;
      if (c == 0xf4) hi = 0x8f;
    } else {
      return false;
    }
    if (s.size() - i <= extra) return false;
    for (size_t k = 1; k <= extra; ++k) {
      const unsigned char t = static_cast<unsigned char>(s[i + k]);
      if (t < (k == 1 ? lo : 0x80) || t > (k == 1 ? hi : 0xbf)) return false;
    }
    i += extra + 1;
  }
  return true;
}

uint64_t CapacityOf(const Member& m, absl::string_view tier) {
  for (const TierCapacity& t : m.tiers) {
    if (t.tier == tier) return t.capacity_bytes;
  }
  return 0;
}

}  // namespace

bool Member::operator==(const Member& o) const {
  return id == o.id && grpc_address == o.grpc_address && ucx_address == o.ucx_address &&
         zone == o.zone && tiers == o.tiers && started_unix_ms == o.started_unix_ms;
}

absl::Status ValidateMemberId(absl::string_view id) {
  return ValidateToken("member id", id, kMaxMemberIdChars);
}

absl::Status ValidateMember(const Member& member) {
  if (absl::Status s = ValidateMemberId(member.id); !s.ok()) return s;
  for (const auto& [field, address] :
       {std::pair<absl::string_view, absl::string_view>("grpc_address", member.grpc_address),
        {"ucx_address", member.ucx_address}}) {
    if (address.empty()) continue;
    if (absl::Status s = ParseHostPort(address).status(); !s.ok()) {
      return absl::InvalidArgumentError(absl::StrCat("member ", field, ": ", s.message()));
    }
  }
  if (!IsUtf8(member.zone)) {
    return absl::InvalidArgumentError(
        absl::StrCat("member zone \"", absl::CHexEscape(member.zone), "\": not valid UTF-8"));
  }
  return absl::OkStatus();
}

absl::Status ValidateClusterName(absl::string_view name) {
  return ValidateToken("cluster name", name, kMaxClusterNameChars);
}

absl::Status ValidateClusterPrefix(absl::string_view prefix) {
  if (prefix.empty() || prefix.front() != '/' || prefix.back() == '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("cluster prefix \"", prefix, "\": must start with '/' and not end with one"));
  }
  for (char c : prefix) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u < 0x20 || u == 0x7f || absl::ascii_isspace(u)) {
      return absl::InvalidArgumentError(absl::StrCat("cluster prefix \"", absl::CHexEscape(prefix),
                                                     "\": whitespace or control character"));
    }
  }
  return absl::OkStatus();
}

std::string ClusterPrefix(absl::string_view name) { return absl::StrCat("/kvstash/", name); }

std::string MembersPrefix(absl::string_view prefix) { return absl::StrCat(prefix, "/members/"); }

std::string MemberKey(absl::string_view prefix, absl::string_view id) {
  return absl::StrCat(MembersPrefix(prefix), id);
}

// Written by hand so the numbers are JSON numbers (protobuf's JSON writes 64-bit integers
// as strings); read with protobuf's JSON reader, which takes either.
std::string MemberToJson(const Member& m) {
  std::string out = "{\"id\":";
  AppendJsonString(&out, m.id);
  out += ",\"grpc_address\":";
  AppendJsonString(&out, m.grpc_address);
  out += ",\"ucx_address\":";
  AppendJsonString(&out, m.ucx_address);
  out += ",\"zone\":";
  AppendJsonString(&out, m.zone);
  out += ",\"tiers\":[";
  for (size_t i = 0; i < m.tiers.size(); ++i) {
    out += i == 0 ? "{\"tier\":" : ",{\"tier\":";
    AppendJsonString(&out, m.tiers[i].tier);
    absl::StrAppend(&out, ",\"capacity_bytes\":", m.tiers[i].capacity_bytes, "}");
  }
  // The fields readers before `tiers` know.
  absl::StrAppend(&out, "],\"dram_capacity_bytes\":", CapacityOf(m, "dram"),
                  ",\"nvme_capacity_bytes\":", CapacityOf(m, "nvme"),
                  ",\"started_unix_ms\":", m.started_unix_ms, "}");
  return out;
}

absl::StatusOr<Member> MemberFromJson(absl::string_view json) {
  record::MemberRecord rec;
  google::protobuf::util::JsonParseOptions options;
  options.ignore_unknown_fields = true;
  const auto parsed = google::protobuf::util::JsonStringToMessage(
      google::protobuf::StringPiece(json.data(), json.size()), &rec, options);
  if (!parsed.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("member JSON is malformed: ", std::string(parsed.message())));
  }
  if (rec.id().empty()) return absl::InvalidArgumentError("member JSON has no \"id\"");
  if (absl::Status s = ValidateMemberId(rec.id()); !s.ok()) {
    return absl::InvalidArgumentError(absl::StrCat("member JSON: ", s.message()));
  }
  Member m;
  m.id = rec.id();
  m.grpc_address = rec.grpc_address();
  m.ucx_address = rec.ucx_address();
  m.zone = rec.zone();
  for (const record::TierCapacity& t : rec.tiers()) {
    m.tiers.push_back({t.tier(), t.capacity_bytes()});
  }
  if (rec.tiers().empty()) {  // written before `tiers`
    if (rec.dram_capacity_bytes() != 0) m.tiers.push_back({"dram", rec.dram_capacity_bytes()});
    if (rec.nvme_capacity_bytes() != 0) m.tiers.push_back({"nvme", rec.nvme_capacity_bytes()});
  }
  m.started_unix_ms = rec.started_unix_ms();
  return m;
}

std::vector<Member> SortedById(std::vector<Member> members) {
  std::map<std::string, Member> by_id;
  for (Member& m : members) by_id[m.id] = std::move(m);
  std::vector<Member> sorted;
  sorted.reserve(by_id.size());
  for (auto& [id, m] : by_id) sorted.push_back(std::move(m));
  return sorted;
}

}  // namespace kvstash::cluster
