#include "common/bearer_token.h"

#include <openssl/evp.h>
#include <sys/random.h>

#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/escaping.h"
#include "absl/strings/str_cat.h"

namespace kvstash {
namespace {

// Bytes of randomness in a token: 256 bits, beyond guessing at any request rate.
constexpr size_t kTokenRandomBytes = 32;
constexpr absl::string_view kTokenPrefix = "kvs_";

// A digest or random source that fails is a broken installation; a token made without one
// would be guessable or unverifiable, so stop instead.
[[noreturn]] void Die(const char* what) {
  std::fprintf(stderr, "kvstash/bearer_token: fatal: %s\n", what);
  std::abort();
}

bool IsNameChar(char c) {
  return absl::ascii_isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ||
         c == '@' || c == ':';
}

}  // namespace

std::string HashToken(absl::string_view token) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  if (EVP_Digest(token.data(), token.size(), digest, &len, EVP_sha256(), nullptr) != 1 ||
      len != 32) {
    Die("SHA-256 failed");
  }
  return absl::BytesToHexString(
      absl::string_view(reinterpret_cast<const char*>(digest), static_cast<size_t>(len)));
}

std::string NewToken() {
  char bytes[kTokenRandomBytes];
  size_t filled = 0;
  while (filled < sizeof(bytes)) {
    const ssize_t n = getrandom(bytes + filled, sizeof(bytes) - filled, 0);
    if (n < 0) {
      if (errno == EINTR) continue;
      Die("getrandom failed");
    }
    filled += static_cast<size_t>(n);
  }
  return absl::StrCat(kTokenPrefix,
                      absl::WebSafeBase64Escape(absl::string_view(bytes, sizeof(bytes))));
}

absl::Status CheckPrincipalName(absl::string_view name) {
  if (name == kAnonymousPrincipalName || name == kOpenPrincipalName) {
    return absl::InvalidArgumentError(absl::StrCat("\"", name, "\" is reserved"));
  }
  bool valid = !name.empty() && name.size() <= kMaxPrincipalNameChars;
  for (char c : name) valid = valid && IsNameChar(c);
  if (!valid) {
    return absl::InvalidArgumentError(
        absl::StrCat("expected 1 to ", kMaxPrincipalNameChars,
                     " letters, digits or . _ - @ : (it names the caller in logs and metrics)"));
  }
  return absl::OkStatus();
}

}  // namespace kvstash
