// The token file: which bearer tokens (stored as SHA-256 digests, never in the clear) belong
// to which principal, and what each principal may do. docs/security.md, "Token file", is
// the format; ParseTokenFile is its only reader.
//
// Thread-safety: ParseTokenFile is a pure function of its argument; a TokenTable is
// immutable once built and shared between threads by const pointer.
#pragma once

#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/auth/principal.h"

namespace kvstash::server::auth {

struct TokenTable {
  // Lowercase hex SHA-256 of each token (HashToken) -> the principal it authenticates.
  // A principal with several digests (tokens being rotated) appears under each.
  absl::flat_hash_map<std::string, PrincipalPtr> by_digest;
  // Every principal of the file, in file order, each once.
  std::vector<PrincipalPtr> principals;
  // Rights of callers presenting no token when auth.required is off; null when the file
  // has no `anonymous` section.
  PrincipalPtr anonymous;
};

// Parses the text of a token file. INVALID_ARGUMENT naming the line and the field
// ("line 7: principals[1].token_sha256: ..."); never echoes a token_sha256 value, which
// may be a token pasted by mistake. Never crashes, whatever the input.
absl::StatusOr<TokenTable> ParseTokenFile(absl::string_view yaml_text);

}  // namespace kvstash::server::auth
