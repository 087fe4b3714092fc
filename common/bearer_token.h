// Bearer tokens: how clients prove who they are to kvstashd (docs/security.md). The daemon's
// token file stores HashToken(token), never the token; `kvstash token new` prints both.
//
// Thread-safety: stateless functions.
#pragma once

#include <string>

#include "absl/strings/string_view.h"

namespace kvstash {

// Environment variable a client reads its token from when its options name none.
inline constexpr char kTokenEnvVar[] = "KVSTASH_TOKEN";

// Lowercase hex SHA-256 of `token`: what the token file stores.
std::string HashToken(absl::string_view token);
// A new random token: "kvs_" + 43 base64url characters (256 bits from the OS's CSPRNG).
std::string NewToken();

}  // namespace kvstash
