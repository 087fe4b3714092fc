// Command-line parsing of the `kvstash` tool: global flags, namespace flags, one command
// and its flags, in any order ("--name VALUE" or "--name=VALUE"; the flags are absl flags
// read with common/flags.h's grammar, so --deadline-ms and --deadline_ms are one flag).
//
// Thread-safety: ParseArgs uses process-wide flags; call it from one thread at a time.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kvstash/client.h"
#include "kvstash/keys.h"

namespace kvstash::cli {

enum class Command {
  kNone,
  kPut,
  kGet,
  kLookup,
  kExists,
  kDelete,
  kStats,
  kHealth,
  kNamespaces,
  kClear,
  kPin,
  kUnpin,
  kEndSession,
  kTokenNew,   // `token new`: local, no daemon
  kTokenHash,  // `token hash`: local, no daemon
  kCluster,    // `cluster [URI]`: the members of a cluster (client/cli/cluster_command.h)
};

// True for the commands that run without a daemon (client/cli/token_commands.h).
inline bool IsLocalCommand(Command c) {
  return c == Command::kTokenNew || c == Command::kTokenHash;
}

struct CliArgs {
  bool help = false;
  Command command = Command::kNone;
  std::string server = "grpc://127.0.0.1:7070";
  ClientOptions options;
  // --token-file PATH: the bearer token is that file's content (surrounding whitespace
  // removed), read when the command runs; without it, $KVSTASH_TOKEN (ClientOptions).
  std::string token_file;
  Namespace ns;  // model_id defaults to "demo-model"
  // --namespace-id HEX: the admin commands name a namespace by id instead of by the
  // namespace flags (as `kvstash namespaces` lists it).
  std::optional<Key128> namespace_id;

  // Command inputs; which apply depends on the command (see UsageText()).
  std::vector<Key128> keys;     // --key HEX[,HEX...]
  std::vector<int32_t> tokens;  // --tokens SPEC
  bool has_tokens = false;
  bool all_chunks = false;                        // --all-chunks
  std::string file;                               // --file PATH
  std::optional<uint64_t> size_bytes;             // --size BYTES
  uint64_t pattern_seed = 0;                      // --pattern-seed N
  uint32_t format = 0;                            // --format N
  std::string out;                                // --out PATH
  uint64_t capacity_bytes = uint64_t{256} << 20;  // --capacity BYTES (get's first buffer)
  uint32_t lease_ms = 0;                          // --lease-ms N
  bool namespace_stats = false;                   // --namespace
  uint64_t session_id = 0;                        // --session N (put, lookup, end-session)
  PutHints hints;                                 // put: --ttl-ms, --priority, --pin, --session

  // token new: the principal entry printed for the token file.
  std::string principal_name;        // --name (default: derived from the token's digest)
  std::vector<std::string> tenants;  // --tenants T1,T2 (default: "default")
  bool admin = false;                // --admin: also administer those tenants
  bool trusted = false;              // --trusted: may use direct access
};

// Parses argv (without the program name). INVALID_ARGUMENT carries a one-line message
// for the user (exit code 2). With --help anywhere, returns args with help set and no
// further checks.
absl::StatusOr<CliArgs> ParseArgs(const std::vector<std::string>& argv);

std::string UsageText();

}  // namespace kvstash::cli
