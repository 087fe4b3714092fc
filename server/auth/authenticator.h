// Authenticator: maps the bearer token a call presents to its Principal, from the token
// file (docs/security.md, "Token file"). The file holds SHA-256 digests of tokens, never
// tokens. It is read at start (a bad file fails the start), and again on Reload(): on
// SIGHUP and when the file changes (polled every reload_interval_ms). A reload that fails
// keeps the previous table and logs why, so a typo never locks everyone out or in.
//
// Thread-safety: thread-safe. Authenticate hashes the token outside any lock and holds a
// shared reader lock only for one hash-map lookup; Reload builds the new table outside it
// and swaps a pointer under it.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/bearer_token.h"
#include "server/auth/principal.h"

namespace kvstash::server {
class Logger;
}  // namespace kvstash::server

namespace kvstash::server::auth {

struct AuthOptions {
  // Path of the token file. Empty: no authentication, every call gets OpenPrincipal().
  std::string token_file;
  // Refuse calls without a token (UNAUTHENTICATED). Off: a call without a token gets the
  // file's `anonymous` principal when it defines one, else OpenPrincipal() (migration
  // mode); a call with a token must still present a valid one.
  bool required = false;
  // How often the token file's modification time, size and inode are checked; a change is
  // reloaded once two checks in a row agree on it (common/file_signature.h); 0: only SIGHUP.
  int64_t reload_interval_ms = 1000;
};

// Counts for metrics: how reloads went and what the current table holds.
struct AuthStats {
  uint64_t reloads_ok = 0;      // successful reads after the first (SIGHUP, change, Reload)
  uint64_t reloads_failed = 0;  // reads refused; the previous table stayed in force
  uint64_t principals = 0;      // principals of the current table (anonymous not counted)
};

class Authenticator {
 public:
  // Reads the token file (if any). INVALID_ARGUMENT / NOT_FOUND naming the file and line.
  // With a token file and reload_interval_ms > 0, a thread polls the file until the
  // Authenticator is destroyed and reloads it on change. Every reload, whoever asks for
  // it, is logged to `log` (when not null; it must outlive the Authenticator), so callers
  // of Reload need not log its result.
  static absl::StatusOr<std::unique_ptr<Authenticator>> Create(const AuthOptions& options,
                                                               Logger* log = nullptr);
  virtual ~Authenticator() = default;

  // The principal presenting `token` (empty: no token presented). UNAUTHENTICATED with
  // "no token" / "unknown or revoked token" (never echoing the token).
  virtual absl::StatusOr<PrincipalPtr> Authenticate(absl::string_view token) const = 0;
  // Reads the file again; on error keeps the current table and returns why.
  virtual absl::Status Reload() = 0;
  // True when a token file is configured (calls are authenticated).
  virtual bool enabled() const = 0;
  virtual const AuthOptions& options() const = 0;
  virtual AuthStats stats() const { return {}; }
};

}  // namespace kvstash::server::auth
