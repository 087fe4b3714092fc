// Fuzzes the cluster member record's parser (cluster/member.h MemberFromJson), which reads
// what any process with write access to the cluster's etcd prefix put there. Input: the
// value's bytes. Checks: a refusal is INVALID_ARGUMENT, and an accepted member has a valid
// id and survives MemberToJson -> MemberFromJson unchanged.
#include <cstddef>
#include <cstdint>

#include "cluster/member.h"
#include "fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvstash::cluster;
  const absl::string_view json(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<Member> member = MemberFromJson(json);
  if (!member.ok()) {
    FUZZ_CHECK(member.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  FUZZ_CHECK(ValidateMemberId(member->id).ok());
  absl::StatusOr<Member> again = MemberFromJson(MemberToJson(*member));
  FUZZ_CHECK(again.ok());
  FUZZ_CHECK(*again == *member);
  return 0;
}
