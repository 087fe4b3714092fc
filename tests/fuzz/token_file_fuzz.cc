// Fuzzes the token file's parser (server/auth/token_file.h ParseTokenFile), which reads a
// file an operator edits by hand. Input: the file's text. Checks: a refusal is
// INVALID_ARGUMENT, and an accepted table maps each digest to one of its principals.
#include <cstddef>
#include <cstdint>

#include "fuzz_util.h"
#include "server/auth/token_file.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace kvstash::server::auth;
  const absl::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<TokenTable> table = ParseTokenFile(text);
  if (!table.ok()) {
    FUZZ_CHECK(table.status().code() == absl::StatusCode::kInvalidArgument);
    return 0;
  }
  for (const auto& [digest, principal] : table->by_digest) {
    FUZZ_CHECK(principal != nullptr);
    FUZZ_CHECK(!digest.empty());
  }
  return 0;
}
