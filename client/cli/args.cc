#include "client/cli/args.h"

#include <algorithm>
#include <utility>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "client/cli/token_spec.h"
#include "common/bearer_token.h"
#include "common/byte_size.h"
#include "common/flags.h"
#include "kvstash/client_options_schema.h"

// The tool's flags as absl flags; names are written with '-' on the command line
// (--deadline-ms), which common/flags.h reads as '_'. Values are read as written, in
// command-line order, by kFlags below, because which flags apply depends on the command.
ABSL_FLAG(std::string, server, "", "daemon address");
ABSL_FLAG(std::string, deadline_ms, "", "per-call deadline");
ABSL_FLAG(std::string, connect_timeout_ms, "", "how long to wait for the daemon");
ABSL_FLAG(std::string, frame_bytes, "", "payload bytes per wire frame");
ABSL_FLAG(std::string, tls_ca, "", "CA of the daemon's certificate");
ABSL_FLAG(std::string, tls_cert, "", "client certificate (mutual TLS)");
ABSL_FLAG(std::string, tls_key, "", "client key (mutual TLS)");
ABSL_FLAG(std::string, tls_server_name, "", "name the daemon's certificate carries");
ABSL_FLAG(std::string, token_file, "", "file holding the bearer token");
ABSL_FLAG(std::string, etcd_ca, "", "CA of etcd's certificate (etcds://)");
ABSL_FLAG(std::string, etcd_cert, "", "client certificate for etcd");
ABSL_FLAG(std::string, etcd_key, "", "client key for etcd");
ABSL_FLAG(std::string, set, "", "client option NAME=VALUE (repeatable)");
ABSL_FLAG(std::string, tenant, "", "namespace tenant");
ABSL_FLAG(std::string, model, "", "namespace model");
ABSL_FLAG(std::string, revision, "", "namespace revision");
ABSL_FLAG(std::string, dtype, "", "namespace dtype");
ABSL_FLAG(std::string, chunk_tokens, "", "namespace chunk tokens");
ABSL_FLAG(std::string, layers, "", "namespace layers");
ABSL_FLAG(std::string, kv_heads, "", "namespace kv heads");
ABSL_FLAG(std::string, head_dim, "", "namespace head dim");
ABSL_FLAG(std::string, hash, "", "xxh3 or sha256");
ABSL_FLAG(std::string, key, "", "chunk keys, HEX[,HEX...]");
ABSL_FLAG(std::string, tokens, "", "token SPEC");
ABSL_FLAG(bool, all_chunks, false, "every full chunk of --tokens");
ABSL_FLAG(std::string, file, "", "payload file");
ABSL_FLAG(std::string, size, "", "pattern payload bytes");
ABSL_FLAG(std::string, pattern_seed, "", "pattern seed");
ABSL_FLAG(std::string, format, "", "chunk format");
ABSL_FLAG(std::string, out, "", "where get writes the bytes");
ABSL_FLAG(std::string, capacity, "", "get's first buffer");
ABSL_FLAG(std::string, lease_ms, "", "lookup lease");
ABSL_FLAG(bool, namespace, false, "stats of this namespace only");
ABSL_FLAG(std::string, namespace_id, "", "namespace id, 32 hex digits");
ABSL_FLAG(std::string, session, "", "session id");
ABSL_FLAG(std::string, ttl_ms, "", "put TTL hint");
ABSL_FLAG(std::string, priority, "", "put priority hint");
ABSL_FLAG(bool, pin, false, "pin the put chunks");
ABSL_FLAG(std::string, name, "", "principal name");
ABSL_FLAG(std::string, tenants, "", "tenants a new token may use");
ABSL_FLAG(bool, admin, false, "a new token administers its tenants");
ABSL_FLAG(bool, trusted, false, "a new token may use direct access");

namespace kvstash::cli {
namespace {

using Apply = absl::Status (*)(absl::string_view value, CliArgs* args);

constexpr uint32_t Bit(Command c) { return 1u << static_cast<int>(c); }
constexpr uint32_t kGlobal = ~0u;
constexpr uint32_t kKeyed =
    Bit(Command::kPut) | Bit(Command::kGet) | Bit(Command::kExists) | Bit(Command::kDelete);
// Admin commands naming one namespace (by the namespace flags or --namespace-id).
constexpr uint32_t kAdmin =
    Bit(Command::kClear) | Bit(Command::kPin) | Bit(Command::kUnpin) | Bit(Command::kEndSession);
constexpr uint32_t kNamespaced = kKeyed | Bit(Command::kLookup) | Bit(Command::kStats) | kAdmin;

struct FlagDef {
  const char* name;   // as users write it
  uint32_t commands;  // Bit() of each command it applies to
  Apply apply;
};

absl::Status Usage(absl::string_view msg) { return absl::InvalidArgumentError(msg); }

// Flag parsers return a message without the flag name; ParseArgs prefixes "--name: ".
template <typename T>
absl::Status ParseNumber(absl::string_view v, T* out) {
  if (v.empty() || v.find_first_not_of("0123456789") != v.npos || !absl::SimpleAtoi(v, out)) {
    return Usage(absl::StrCat("expected a non-negative integer, got \"", v, "\""));
  }
  return absl::OkStatus();
}

absl::Status ParseSize(absl::string_view v, uint64_t* out) {
  absl::StatusOr<uint64_t> n = ParseByteSize(v);
  if (!n.ok()) return n.status();
  *out = *n;
  return absl::OkStatus();
}

template <std::string CliArgs::*kField>
absl::Status SetString(absl::string_view v, CliArgs* a) {
  a->*kField = std::string(v);
  return absl::OkStatus();
}
template <std::string Namespace::*kField>
absl::Status SetNsString(absl::string_view v, CliArgs* a) {
  a->ns.*kField = std::string(v);
  return absl::OkStatus();
}
template <uint32_t Namespace::*kField>
absl::Status SetNsNumber(absl::string_view v, CliArgs* a) {
  return ParseNumber(v, &(a->ns.*kField));
}
// common/flags.h has checked the value with absl's bool grammar.
template <bool CliArgs::*kField>
absl::Status SetBool(absl::string_view v, CliArgs* a) {
  bool value = false;
  if (!absl::SimpleAtob(v, &value)) return Usage(absl::StrCat("not a bool: \"", v, "\""));
  a->*kField = value;
  return absl::OkStatus();
}

absl::Status ParseKeys(absl::string_view v, CliArgs* a) {
  for (absl::string_view hex : absl::StrSplit(v, ',')) {
    absl::StatusOr<Key128> key = KeyFromHex(absl::StripAsciiWhitespace(hex));
    if (!key.ok()) return Usage(absl::StrCat("\"", hex, "\" is not 32 hex digits"));
    a->keys.push_back(*key);
  }
  return absl::OkStatus();
}

absl::Status ParseTokens(absl::string_view v, CliArgs* a) {
  absl::StatusOr<std::vector<int32_t>> tokens = ParseTokenSpec(v);
  if (!tokens.ok()) return tokens.status();
  a->tokens = *std::move(tokens);
  a->has_tokens = true;
  return absl::OkStatus();
}

absl::Status ParseHash(absl::string_view v, CliArgs* a) {
  if (v == "xxh3") {
    a->ns.hash_algo = HashAlgo::kXxh3_128;
  } else if (v == "sha256") {
    a->ns.hash_algo = HashAlgo::kSha256_128;
  } else {
    return Usage(absl::StrCat("expected xxh3 or sha256, got \"", v, "\""));
  }
  return absl::OkStatus();
}

template <std::string ClientOptions::*kField>
absl::Status SetOption(absl::string_view v, CliArgs* a) {
  a->options.*kField = std::string(v);
  return absl::OkStatus();
}

template <std::string ClusterOptions::*kField>
absl::Status SetClusterOption(absl::string_view v, CliArgs* a) {
  a->options.cluster.*kField = std::string(v);
  return absl::OkStatus();
}

// --set NAME=VALUE: any client option by its schema name (kvstash/client_options_schema.h).
absl::Status ParseSetOption(absl::string_view v, CliArgs* a) {
  const size_t eq = v.find('=');
  if (eq == absl::string_view::npos || eq == 0) {
    return Usage(absl::StrCat("expected NAME=VALUE, got \"", v, "\""));
  }
  return SetClientOption(&a->options, v.substr(0, eq), v.substr(eq + 1));
}

absl::Status ParseFrameBytes(absl::string_view v, CliArgs* a) {
  uint64_t n = 0;
  absl::Status s = ParseSize(v, &n);
  // Out-of-range values are left to ClientOptions::Validate, which names the field.
  a->options.frame_bytes = static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX));
  return s;
}

constexpr uint32_t kPut = Bit(Command::kPut);
constexpr uint32_t kGet = Bit(Command::kGet);
constexpr uint32_t kPinning = Bit(Command::kPin) | Bit(Command::kUnpin);

absl::Status ParseNamespaceId(absl::string_view v, CliArgs* a) {
  absl::StatusOr<Key128> id = KeyFromHex(v);
  if (!id.ok()) return Usage(absl::StrCat("\"", v, "\" is not 32 hex digits"));
  a->namespace_id = *id;
  return absl::OkStatus();
}

absl::Status ParseTenants(absl::string_view v, CliArgs* a) {
  a->tenants.clear();
  for (absl::string_view tenant : absl::StrSplit(v, ',')) {
    tenant = absl::StripAsciiWhitespace(tenant);
    if (tenant.empty()) return Usage(absl::StrCat("empty tenant name in \"", v, "\""));
    for (char c : tenant) {
      if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) {
        return Usage("tenant names hold no control characters");
      }
    }
    a->tenants.emplace_back(tenant);
  }
  return absl::OkStatus();
}

absl::Status ParsePriority(absl::string_view v, CliArgs* a) {
  static constexpr std::pair<const char*, Priority> kNames[] = {
      {"low", Priority::kLow}, {"normal", Priority::kNormal}, {"high", Priority::kHigh}};
  for (const auto& [name, p] : kNames) {
    if (v == name) {
      a->hints.priority = p;
      return absl::OkStatus();
    }
  }
  return Usage(absl::StrCat("expected low, normal or high, got \"", v, "\""));
}

const FlagDef kFlags[] = {
    {"server", kGlobal, SetString<&CliArgs::server>},
    {"deadline-ms", kGlobal,
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->options.deadline_ms); }},
    {"connect-timeout-ms", kGlobal,
     [](absl::string_view v, CliArgs* a) {
       return ParseNumber(v, &a->options.connect_timeout_ms);
     }},
    {"frame-bytes", kGlobal, ParseFrameBytes},
    {"tls-ca", kGlobal, SetOption<&ClientOptions::tls_ca_file>},
    {"tls-cert", kGlobal, SetOption<&ClientOptions::tls_cert_file>},
    {"tls-key", kGlobal, SetOption<&ClientOptions::tls_key_file>},
    {"tls-server-name", kGlobal, SetOption<&ClientOptions::tls_server_name>},
    {"token-file", kGlobal, SetString<&CliArgs::token_file>},
    {"etcd-ca", kGlobal, SetClusterOption<&ClusterOptions::etcd_ca_file>},
    {"etcd-cert", kGlobal, SetClusterOption<&ClusterOptions::etcd_cert_file>},
    {"etcd-key", kGlobal, SetClusterOption<&ClusterOptions::etcd_key_file>},
    {"set", kGlobal, ParseSetOption},
    {"tenant", kNamespaced, SetNsString<&Namespace::tenant>},
    {"model", kNamespaced, SetNsString<&Namespace::model_id>},
    {"revision", kNamespaced, SetNsString<&Namespace::revision>},
    {"dtype", kNamespaced, SetNsString<&Namespace::dtype>},
    {"chunk-tokens", kNamespaced, SetNsNumber<&Namespace::chunk_tokens>},
    {"layers", kNamespaced, SetNsNumber<&Namespace::num_layers>},
    {"kv-heads", kNamespaced, SetNsNumber<&Namespace::kv_heads>},
    {"head-dim", kNamespaced, SetNsNumber<&Namespace::head_dim>},
    {"hash", kNamespaced, ParseHash},
    {"namespace-id", kAdmin, ParseNamespaceId},
    {"key", kKeyed | kPinning, ParseKeys},
    {"tokens", kKeyed | kPinning | Bit(Command::kLookup), ParseTokens},
    {"all-chunks", kPut | Bit(Command::kExists) | Bit(Command::kDelete),
     SetBool<&CliArgs::all_chunks>},
    {"file", kPut, SetString<&CliArgs::file>},
    {"size", kPut,
     [](absl::string_view v, CliArgs* a) {
       uint64_t n = 0;
       absl::Status s = ParseSize(v, &n);
       a->size_bytes = n;
       return s;
     }},
    {"pattern-seed", kPut,
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->pattern_seed); }},
    {"format", kPut, [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->format); }},
    {"out", kGet, SetString<&CliArgs::out>},
    {"capacity", kGet,
     [](absl::string_view v, CliArgs* a) { return ParseSize(v, &a->capacity_bytes); }},
    {"lease-ms", Bit(Command::kLookup),
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->lease_ms); }},
    {"namespace", Bit(Command::kStats), SetBool<&CliArgs::namespace_stats>},
    {"session", kPut | Bit(Command::kLookup) | Bit(Command::kEndSession),
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->session_id); }},
    {"ttl-ms", kPut,
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->hints.ttl_ms); }},
    {"priority", kPut, ParsePriority},
    {"pin", kPut,
     [](absl::string_view v, CliArgs* a) {
       if (!absl::SimpleAtob(v, &a->hints.pin))
         return Usage(absl::StrCat("not a bool: \"", v, "\""));
       return absl::OkStatus();
     }},
    {"name", Bit(Command::kTokenNew),
     [](absl::string_view v, CliArgs* a) {
       a->principal_name = std::string(v);
       return CheckPrincipalName(v);
     }},
    {"tenants", Bit(Command::kTokenNew), ParseTenants},
    {"admin", Bit(Command::kTokenNew), SetBool<&CliArgs::admin>},
    {"trusted", Bit(Command::kTokenNew), SetBool<&CliArgs::trusted>},
};

// The definition of an absl flag name ("deadline_ms").
const FlagDef* FindFlag(absl::string_view absl_name) {
  for (const FlagDef& f : kFlags) {
    if (absl::StrReplaceAll(f.name, {{"-", "_"}}) == absl_name) return &f;
  }
  return nullptr;
}

// The command named by the positional words: one word, or two for `token new|hash`.
absl::StatusOr<Command> ParseCommand(const std::vector<std::string>& words) {
  static constexpr std::pair<const char*, Command> kCommands[] = {
      {"put", Command::kPut},       {"get", Command::kGet},
      {"lookup", Command::kLookup}, {"exists", Command::kExists},
      {"delete", Command::kDelete}, {"stats", Command::kStats},
      {"health", Command::kHealth}, {"namespaces", Command::kNamespaces},
      {"clear", Command::kClear},   {"pin", Command::kPin},
      {"unpin", Command::kUnpin},   {"end-session", Command::kEndSession}};
  const std::string& word = words[0];
  if (word == "token") {
    const std::string sub = words.size() > 1 ? words[1] : "";
    if (words.size() > 2) return Usage(absl::StrCat("unexpected argument \"", words[2], "\""));
    if (sub == "new") return Command::kTokenNew;
    if (sub == "hash") return Command::kTokenHash;
    return Usage("token: expected `token new` or `token hash` (see --help)");
  }
  if (word == "cluster") {  // its URI may stand as a second word (see ParseArgs)
    if (words.size() > 2) return Usage(absl::StrCat("unexpected argument \"", words[2], "\""));
    return Command::kCluster;
  }
  if (words.size() > 1) return Usage(absl::StrCat("unexpected argument \"", words[1], "\""));
  for (const auto& [name, cmd] : kCommands) {
    if (word == name) return cmd;
  }
  return Usage(absl::StrCat("unknown command \"", word, "\" (see --help)"));
}

const char* CommandName(Command c) {
  static constexpr const char* kNames[] = {
      "",           "put",   "get", "lookup", "exists",      "delete",    "stats",      "health",
      "namespaces", "clear", "pin", "unpin",  "end-session", "token new", "token hash", "cluster"};
  return kNames[static_cast<int>(c)];
}

// Chunk keys a command names: exactly one of --key and --tokens, with a full chunk.
absl::Status CheckKeySource(const CliArgs& a, bool several_keys_ok) {
  const char* cmd = CommandName(a.command);
  if (a.keys.empty() == !a.has_tokens) {
    return Usage(absl::StrCat(cmd, ": give exactly one of --key and --tokens"));
  }
  if (!a.keys.empty() && a.keys.size() > 1 && !several_keys_ok) {
    return Usage(absl::StrCat(cmd, ": one --key only"));
  }
  if (a.all_chunks && !a.has_tokens) {
    return Usage(absl::StrCat(cmd, ": --all-chunks needs --tokens"));
  }
  if (a.has_tokens && a.tokens.size() < a.ns.chunk_tokens) {
    return Usage(absl::StrCat(cmd, ": --tokens holds ", a.tokens.size(),
                              " tokens, less than one chunk of ", a.ns.chunk_tokens));
  }
  return absl::OkStatus();
}

absl::Status CheckCommand(const CliArgs& a) {
  switch (a.command) {
    case Command::kPut:
      if (a.file.empty() == !a.size_bytes.has_value()) {
        return Usage("put: give exactly one of --file and --size");
      }
      return CheckKeySource(a, false);
    case Command::kGet:
      return CheckKeySource(a, false);
    case Command::kExists:
    case Command::kDelete:
      return CheckKeySource(a, true);
    case Command::kLookup:
      if (!a.has_tokens) return Usage("lookup: --tokens is required");
      return absl::OkStatus();
    case Command::kPin:
    case Command::kUnpin:
      return CheckKeySource(a, true);
    case Command::kEndSession:
      if (a.session_id == 0) return Usage("end-session: --session N (not 0) is required");
      return absl::OkStatus();
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::StatusOr<CliArgs> ParseArgs(const std::vector<std::string>& argv) {
  CliArgs args;
  args.ns.model_id = "demo-model";
  for (const std::string& arg : argv) {
    if (arg == "--help" || arg == "-h") args.help = true;
  }
  if (args.help) return args;
  FlagParseOptions options;
  options.defined_in = "client/cli/args.cc";
  options.allow_positional = true;
  absl::StatusOr<ParsedFlags> parsed = ParseFlags(argv, options);
  if (!parsed.ok()) {
    if (absl::StartsWith(parsed.status().message(), "unknown flag")) {
      return Usage(absl::StrCat(parsed.status().message(), " (see --help)"));
    }
    return parsed.status();
  }
  if (parsed->positional.empty()) return Usage("no command given (see --help)");
  absl::StatusOr<Command> cmd = ParseCommand(parsed->positional);
  if (!cmd.ok()) return cmd.status();
  args.command = *cmd;
  const std::string command = CommandName(args.command);
  for (const auto& [name, value] : parsed->uses) {
    const FlagDef* def = FindFlag(name);
    if ((def->commands & Bit(args.command)) == 0) {
      return Usage(absl::StrCat("--", def->name, " does not apply to ", command));
    }
    if (absl::Status st = def->apply(value, &args); !st.ok()) {
      return Usage(absl::StrCat("--", def->name, ": ", st.message()));
    }
  }
  // `kvstash cluster URI` is `kvstash --server URI cluster`.
  if (args.command == Command::kCluster && parsed->positional.size() == 2) {
    args.server = parsed->positional[1];
  }
  if (absl::Status st = args.ns.Validate(); !st.ok()) {
    return Usage(absl::StrCat("namespace flags: ", st.message()));
  }
  if (absl::Status st = args.options.Validate(); !st.ok()) return Usage(st.message());
  if (absl::Status st = CheckCommand(args); !st.ok()) return st;
  return args;
}

std::string UsageText() {
  return R"(usage: kvstash [GLOBAL FLAGS] [NAMESPACE FLAGS] COMMAND [COMMAND FLAGS]

Stores and fetches KV-cache chunks in a kvstashd daemon.

Commands:
  put     (--key HEX | --tokens SPEC [--all-chunks]) (--file PATH | --size BYTES
          [--pattern-seed N]) [--format N]
          [--session N] [--ttl-ms N] [--priority low|normal|high] [--pin]
          Stores one chunk (with --tokens: the chunk of the last full chunk of tokens;
          with --all-chunks: every full chunk, one key each, each naming the one before
          as its parent). Without --file the payload is a deterministic pattern of
          --size bytes chosen by --pattern-seed. The other flags are the chunks' hints.
  get     (--key HEX | --tokens SPEC) [--out PATH] [--capacity BYTES]
          Fetches one chunk; prints size, tokens and checksum; --out writes the bytes.
  lookup  --tokens SPEC [--lease-ms N] [--session N]
          How many leading chunks of the tokens are stored, and in which tier.
  exists  (--key HEX[,HEX...] | --tokens SPEC [--all-chunks])
  delete  (--key HEX[,HEX...] | --tokens SPEC [--all-chunks])
  stats   [--namespace]   counters and DRAM use; --namespace: this namespace only
  health
  namespaces  every namespace the daemon knows, with its use of DRAM and NVMe
  cluster [URI]  the members of a cluster (etcd://HOST:PORT/NAME, static://A,B, dns://
          NAME:PORT; default --server): id, address, zone, DRAM/NVMe capacity and use
          (each member's Stats), and the client's connection and breaker state for it

Admin commands; each names a namespace by the namespace flags or --namespace-id HEX:
  clear        deletes every chunk of the namespace
  pin          (--key HEX[,HEX...] | --tokens SPEC)
  unpin        (--key HEX[,HEX...] | --tokens SPEC)
               Pins (unpins) the leading stored chunks of the keys (with --tokens: of
               every full chunk of the tokens), up to the first absent one.
  end-session  --session N   ends a session: its chunks become ordinary chunks

Token commands (local; no daemon is contacted):
  token new   [--name NAME] [--tenants T1,T2] [--admin] [--trusted]
              Prints a new bearer token on stdout (shown once: store it as the client's
              secret), and on stderr the principal entry for the daemon's token file,
              which holds only the token's SHA-256. --tenants: the tenants it may read
              and write (default "default"; "*" = every tenant); --admin: administer
              them too; --trusted: may use direct access to the daemon's memory.
  token hash  Reads a token on stdin and prints its SHA-256, as the token file stores it.

Global flags:
  --server URI              daemon address (default grpc://127.0.0.1:7070)
  --deadline-ms N           per-call deadline, retries included (default 30000)
  --connect-timeout-ms N    how long to wait for the daemon (default 5000)
  --frame-bytes BYTES       payload bytes per wire frame (default 1MiB)
  --tls-ca FILE             PEM CA of the daemon's certificate: gRPC over TLS (also with
                            a grpcs:// URI; default $KVSTASH_TLS_CA)
  --tls-cert FILE --tls-key FILE
                            client certificate and key for mutual TLS
                            (default $KVSTASH_TLS_CERT, $KVSTASH_TLS_KEY)
  --tls-server-name NAME    name the daemon's certificate carries, if not the URI's host
  --token-file PATH         file holding the bearer token (default: $KVSTASH_TOKEN)
  --etcd-ca FILE            cluster URIs: PEM CA of etcd's certificate, TLS to etcd (also
                            with an etcds:// URI; default: the system's roots)
  --etcd-cert FILE --etcd-key FILE
                            client certificate and key for an etcd with client-cert-auth
  --set NAME=VALUE          any client option (client/README.md, "Options"), e.g.
                            --set ucx_copy_threads=2 --set cluster.replicas=2 (repeatable)

Namespace flags (what the chunk bytes mean; must match the writer's):
  --tenant S (default "default")   --model S (default "demo-model")   --revision S
  --dtype S (default fp16)         --chunk-tokens N (default 256)
  --layers N  --kv-heads N  --head-dim N  --hash xxh3|sha256 (default xxh3)

Token SPEC: comma-separated ids and inclusive ranges, e.g. "0-1023" or "1,2,3,10-20".
BYTES: an integer with an optional suffix B, KiB, MiB, GiB, TiB, KB, MB, GB, TB.

Exit status: 0 success, 1 the call failed (reason on stderr), 2 usage error.
)";
}

}  // namespace kvstash::cli
