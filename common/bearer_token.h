// Bearer tokens: how clients prove who they are to kvstashd (docs/security.md). The daemon's
// token file stores HashToken(token), never the token; `kvstash token new` prints both.
//
// Thread-safety: stateless functions.
#pragma once

#include <cstddef>
#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kvstash {

// Environment variable a client reads its token from when its options name none.
inline constexpr char kTokenEnvVar[] = "KVSTASH_TOKEN";

// Lowercase hex SHA-256 of `token`: what the token file stores.
std::string HashToken(absl::string_view token);
// A new random token: "kvs_" + 43 base64url characters (256 bits from the OS's CSPRNG).
std::string NewToken();

// Principal names the token file reserves: callers without a token, and every caller when
// the daemon has no token file.
inline constexpr absl::string_view kAnonymousPrincipalName = "anonymous";
inline constexpr absl::string_view kOpenPrincipalName = "open";
inline constexpr size_t kMaxPrincipalNameChars = 128;

// OK when `name` may name a principal in the token file: 1 to kMaxPrincipalNameChars
// letters, digits or . _ - @ : (it names the caller in logs and metrics), and not a
// reserved name. INVALID_ARGUMENT saying which rule failed.
absl::Status CheckPrincipalName(absl::string_view name);

}  // namespace kvstash
