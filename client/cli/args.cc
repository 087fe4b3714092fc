#include "client/cli/args.h"

#include <algorithm>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/byte_size.h"
#include "client/cli/token_spec.h"

namespace kvstash::cli {
namespace {

using Apply = absl::Status (*)(absl::string_view value, CliArgs* args);

constexpr uint32_t Bit(Command c) { return 1u << static_cast<int>(c); }
constexpr uint32_t kGlobal = ~0u;
constexpr uint32_t kKeyed =
    Bit(Command::kPut) | Bit(Command::kGet) | Bit(Command::kExists) | Bit(Command::kDelete);
constexpr uint32_t kNamespaced = kKeyed | Bit(Command::kLookup) | Bit(Command::kStats);

struct FlagDef {
  const char* name;
  bool takes_value;
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
template <bool CliArgs::*kField>
absl::Status SetTrue(absl::string_view, CliArgs* a) {
  a->*kField = true;
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

absl::Status ParseFrameBytes(absl::string_view v, CliArgs* a) {
  uint64_t n = 0;
  absl::Status s = ParseSize(v, &n);
  // Out-of-range values are left to ClientOptions::Validate, which names the field.
  a->options.frame_bytes = static_cast<uint32_t>(std::min<uint64_t>(n, UINT32_MAX));
  return s;
}

constexpr uint32_t kPut = Bit(Command::kPut);
constexpr uint32_t kGet = Bit(Command::kGet);

const FlagDef kFlags[] = {
    {"help", false, kGlobal, SetTrue<&CliArgs::help>},
    {"server", true, kGlobal, SetString<&CliArgs::server>},
    {"deadline-ms", true, kGlobal,
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->options.deadline_ms); }},
    {"connect-timeout-ms", true, kGlobal,
     [](absl::string_view v, CliArgs* a) {
       return ParseNumber(v, &a->options.connect_timeout_ms);
     }},
    {"frame-bytes", true, kGlobal, ParseFrameBytes},
    {"tenant", true, kNamespaced, SetNsString<&Namespace::tenant>},
    {"model", true, kNamespaced, SetNsString<&Namespace::model_id>},
    {"revision", true, kNamespaced, SetNsString<&Namespace::revision>},
    {"dtype", true, kNamespaced, SetNsString<&Namespace::dtype>},
    {"chunk-tokens", true, kNamespaced, SetNsNumber<&Namespace::chunk_tokens>},
    {"layers", true, kNamespaced, SetNsNumber<&Namespace::num_layers>},
    {"kv-heads", true, kNamespaced, SetNsNumber<&Namespace::kv_heads>},
    {"head-dim", true, kNamespaced, SetNsNumber<&Namespace::head_dim>},
    {"hash", true, kNamespaced, ParseHash},
    {"key", true, kKeyed, ParseKeys},
    {"tokens", true, kKeyed | Bit(Command::kLookup), ParseTokens},
    {"all-chunks", false, kPut | Bit(Command::kExists) | Bit(Command::kDelete),
     SetTrue<&CliArgs::all_chunks>},
    {"file", true, kPut, SetString<&CliArgs::file>},
    {"size", true, kPut,
     [](absl::string_view v, CliArgs* a) {
       uint64_t n = 0;
       absl::Status s = ParseSize(v, &n);
       a->size_bytes = n;
       return s;
     }},
    {"pattern-seed", true, kPut,
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->pattern_seed); }},
    {"format", true, kPut,
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->format); }},
    {"out", true, kGet, SetString<&CliArgs::out>},
    {"capacity", true, kGet,
     [](absl::string_view v, CliArgs* a) { return ParseSize(v, &a->capacity_bytes); }},
    {"lease-ms", true, Bit(Command::kLookup),
     [](absl::string_view v, CliArgs* a) { return ParseNumber(v, &a->lease_ms); }},
    {"namespace", false, Bit(Command::kStats), SetTrue<&CliArgs::namespace_stats>},
};

const FlagDef* FindFlag(absl::string_view name) {
  for (const FlagDef& f : kFlags) {
    if (name == f.name) return &f;
  }
  return nullptr;
}

absl::StatusOr<Command> ParseCommand(absl::string_view word) {
  static constexpr std::pair<const char*, Command> kCommands[] = {
      {"put", Command::kPut},       {"get", Command::kGet},       {"lookup", Command::kLookup},
      {"exists", Command::kExists}, {"delete", Command::kDelete}, {"stats", Command::kStats},
      {"health", Command::kHealth}};
  for (const auto& [name, cmd] : kCommands) {
    if (word == name) return cmd;
  }
  return Usage(absl::StrCat("unknown command \"", word, "\" (see --help)"));
}

struct FlagUse {
  const FlagDef* def;
  std::string value;
};

// Splits argv into the command word and flag uses, without applying anything yet: which
// flags are allowed depends on the command, which may come after them.
absl::Status Tokenize(const std::vector<std::string>& argv, std::string* command,
                      std::vector<FlagUse>* uses) {
  for (size_t i = 0; i < argv.size(); ++i) {
    absl::string_view arg = argv[i];
    if (!absl::StartsWith(arg, "--")) {
      if (!command->empty()) return Usage(absl::StrCat("unexpected argument \"", arg, "\""));
      *command = std::string(arg);
      continue;
    }
    arg.remove_prefix(2);
    size_t eq = arg.find('=');
    absl::string_view name = arg.substr(0, eq);
    const FlagDef* def = FindFlag(name);
    if (def == nullptr) return Usage(absl::StrCat("unknown flag --", name, " (see --help)"));
    FlagUse use{def, ""};
    if (eq != absl::string_view::npos) {
      if (!def->takes_value) return Usage(absl::StrCat("--", name, " takes no value"));
      use.value = std::string(arg.substr(eq + 1));
    } else if (def->takes_value) {
      if (i + 1 >= argv.size()) return Usage(absl::StrCat("--", name, " needs a value"));
      use.value = argv[++i];
    }
    uses->push_back(std::move(use));
  }
  return absl::OkStatus();
}

const char* CommandName(Command c) {
  static constexpr const char* kNames[] = {"",       "put",    "get",   "lookup",
                                           "exists", "delete", "stats", "health"};
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
    default:
      return absl::OkStatus();
  }
}

}  // namespace

absl::StatusOr<CliArgs> ParseArgs(const std::vector<std::string>& argv) {
  std::string command;
  std::vector<FlagUse> uses;
  CliArgs args;
  args.ns.model_id = "demo-model";
  for (const std::string& arg : argv) {
    if (arg == "--help" || arg == "-h") args.help = true;
  }
  if (args.help) return args;
  if (absl::Status s = Tokenize(argv, &command, &uses); !s.ok()) return s;
  if (command.empty()) return Usage("no command given (see --help)");
  absl::StatusOr<Command> cmd = ParseCommand(command);
  if (!cmd.ok()) return cmd.status();
  args.command = *cmd;
  for (const FlagUse& use : uses) {
    if ((use.def->commands & Bit(args.command)) == 0) {
      return Usage(absl::StrCat("--", use.def->name, " does not apply to ", command));
    }
    if (absl::Status st = use.def->apply(use.value, &args); !st.ok()) {
      return Usage(absl::StrCat("--", use.def->name, ": ", st.message()));
    }
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
          Stores one chunk (with --tokens: the chunk of the last full chunk of tokens;
          with --all-chunks: every full chunk, one key each). Without --file the payload
          is a deterministic pattern of --size bytes chosen by --pattern-seed.
  get     (--key HEX | --tokens SPEC) [--out PATH] [--capacity BYTES]
          Fetches one chunk; prints size, tokens and checksum; --out writes the bytes.
  lookup  --tokens SPEC [--lease-ms N]
          How many leading chunks of the tokens are stored, and in which tier.
  exists  (--key HEX[,HEX...] | --tokens SPEC [--all-chunks])
  delete  (--key HEX[,HEX...] | --tokens SPEC [--all-chunks])
  stats   [--namespace]   counters and DRAM use; --namespace: this namespace only
  health

Global flags:
  --server URI              daemon address (default grpc://127.0.0.1:7070)
  --deadline-ms N           per-call deadline, retries included (default 30000)
  --connect-timeout-ms N    how long to wait for the daemon (default 5000)
  --frame-bytes BYTES       payload bytes per wire frame (default 1MiB)

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
