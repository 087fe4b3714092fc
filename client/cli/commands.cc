#include "client/cli/commands.h"

#include <fstream>
#include <iterator>
#include <memory>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/cli/cluster_command.h"
#include "client/cli/output.h"
#include "kvstash/client.h"

namespace kvstash::cli {
namespace {

// Keys named by --key, or derived from --tokens: the last full chunk's key, or with
// --all-chunks every full chunk's.
std::vector<Key128> CommandKeys(const CliArgs& a) {
  if (!a.has_tokens) return a.keys;
  std::vector<Key128> keys = KeyChain(a.ns).PrefixKeys(a.tokens);
  if (!a.all_chunks && !keys.empty()) keys.erase(keys.begin(), keys.end() - 1);
  return keys;
}

absl::StatusOr<std::vector<uint8_t>> ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(absl::StrCat("cannot open ", path));
  std::vector<uint8_t> bytes((std::istreambuf_iterator<char>(in)),
                             std::istreambuf_iterator<char>());
  if (in.bad()) return absl::DataLossError(absl::StrCat("cannot read ", path));
  return bytes;
}

absl::Status WriteFile(const std::string& path, const void* data, size_t size) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(static_cast<const char*>(data), static_cast<std::streamsize>(size));
  out.close();
  if (!out) return absl::PermissionDeniedError(absl::StrCat("cannot write ", path));
  return absl::OkStatus();
}

absl::Status RunPut(Client& client, NamespaceHandle ns, const CliArgs& a, std::ostream& out) {
  std::vector<Key128> keys = CommandKeys(a);
  std::vector<std::vector<uint8_t>> payloads;
  for (size_t i = 0; i < keys.size(); ++i) {
    if (a.file.empty()) {
      payloads.push_back(PatternBytes(a.pattern_seed + i, *a.size_bytes));
    } else {
      absl::StatusOr<std::vector<uint8_t>> bytes = ReadFile(a.file);
      if (!bytes.ok()) return bytes.status();
      payloads.push_back(*std::move(bytes));
    }
  }
  std::vector<PutItem> items(keys.size());
  uint64_t total = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    items[i].key = keys[i];
    items[i].data = payloads[i].data();
    items[i].size = payloads[i].size();
    items[i].tokens = a.has_tokens ? a.ns.chunk_tokens : 0;
    items[i].format = a.format;
    items[i].hints = a.hints;
    items[i].hints.session_id = a.session_id;
    // --all-chunks puts a whole chain: each chunk names the one before it.
    items[i].hints.has_parent = a.all_chunks && i > 0;
    if (items[i].hints.has_parent) items[i].hints.parent = keys[i - 1];
    total += payloads[i].size();
  }
  absl::Time start = absl::Now();
  if (absl::Status s = client.Put(ns, absl::MakeSpan(items)); !s.ok()) return s;
  absl::Duration elapsed = absl::Now() - start;
  absl::Status first_error;
  for (const PutItem& item : items) {
    out << "put key=" << KeyToHex(item.key) << " bytes=" << item.size
        << (item.already_present ? " already_present" : "")
        << (item.status.ok() ? "" : absl::StrCat(" error=", item.status.ToString())) << "\n";
    if (first_error.ok()) first_error = item.status;
  }
  out << "total chunks=" << items.size() << " bytes=" << total << " " << RateText(total, elapsed)
      << "\n";
  return first_error;
}

// Fetches one key, growing the buffer once if the chunk is larger than --capacity.
absl::Status FetchOne(Client& client, NamespaceHandle ns, uint64_t capacity, GetItem* item,
                      std::unique_ptr<uint8_t[]>* buf, absl::Duration* elapsed) {
  for (int attempt = 0; attempt < 2; ++attempt) {
    buf->reset(new uint8_t[capacity > 0 ? capacity : 1]);
    item->data = buf->get();
    item->capacity = capacity;
    absl::Time start = absl::Now();
    if (absl::Status s = client.Get(ns, absl::MakeSpan(item, 1)); !s.ok()) return s;
    *elapsed = absl::Now() - start;
    if (!absl::IsResourceExhausted(item->status) || item->size <= capacity) break;
    capacity = item->size;
  }
  return item->status;
}

absl::Status RunGet(Client& client, NamespaceHandle ns, const CliArgs& a, std::ostream& out) {
  GetItem item;
  item.key = CommandKeys(a).back();
  std::unique_ptr<uint8_t[]> buf;
  absl::Duration elapsed;
  if (absl::Status s = FetchOne(client, ns, a.capacity_bytes, &item, &buf, &elapsed); !s.ok()) {
    return s;
  }
  out << "get key=" << KeyToHex(item.key) << " size=" << item.size << " tokens=" << item.tokens
      << " format=" << item.format << " checksum=" << absl::StrFormat("%016x", item.checksum) << " "
      << RateText(item.size, elapsed) << "\n";
  if (!a.out.empty()) return WriteFile(a.out, item.data, item.size);
  return absl::OkStatus();
}

absl::Status RunLookup(Client& client, NamespaceHandle ns, const CliArgs& a, std::ostream& out) {
  std::vector<Key128> keys = KeyChain(a.ns).PrefixKeys(a.tokens);
  absl::StatusOr<LookupResult> r = client.Lookup(ns, keys, a.lease_ms, a.session_id);
  if (!r.ok()) return r.status();
  out << LookupSummary(r->hit_count, keys.size(), a.ns.chunk_tokens, a.tokens.size()) << "\n";
  out << "tiers: " << TierList(r->tiers) << "\n";
  if (r->lease_id != 0) out << "lease_id=" << r->lease_id << "\n";
  return absl::OkStatus();
}

absl::Status RunExists(Client& client, NamespaceHandle ns, const CliArgs& a, std::ostream& out) {
  std::vector<Key128> keys = CommandKeys(a);
  absl::StatusOr<std::vector<ChunkTier>> tiers = client.Exists(ns, keys);
  if (!tiers.ok()) return tiers.status();
  size_t present = 0;
  for (size_t i = 0; i < keys.size(); ++i) {
    out << KeyToHex(keys[i]) << " " << TierName((*tiers)[i]) << "\n";
    if ((*tiers)[i] != ChunkTier::kNone) ++present;
  }
  out << "present " << present << "/" << keys.size() << "\n";
  return absl::OkStatus();
}

absl::Status RunDelete(Client& client, NamespaceHandle ns, const CliArgs& a, std::ostream& out) {
  std::vector<Key128> keys = CommandKeys(a);
  absl::StatusOr<uint32_t> deleted = client.Delete(ns, keys);
  if (!deleted.ok()) return deleted.status();
  out << "deleted " << *deleted << " of " << keys.size() << " keys\n";
  return absl::OkStatus();
}

absl::Status RunHealth(Client& client, std::ostream& out) {
  absl::StatusOr<HealthInfo> h = client.Health();
  if (!h.ok()) return h.status();
  out << (h->serving ? "serving" : "draining") << " version=" << h->version
      << " uptime_ms=" << h->uptime_ms << "\n";
  return absl::OkStatus();
}

absl::Status RunNamespaces(Client& client, std::ostream& out) {
  absl::StatusOr<std::vector<NamespaceUsage>> list = client.ListNamespaces();
  if (!list.ok()) return list.status();
  out << NamespacesTable(*list);
  return absl::OkStatus();
}

absl::Status RunClear(Client& client, NamespaceHandle ns, std::ostream& out) {
  absl::StatusOr<uint64_t> deleted = client.ClearNamespace(ns);
  if (!deleted.ok()) return deleted.status();
  out << "cleared namespace " << KeyToHex(ns.id) << ": deleted " << *deleted << " chunks\n";
  return absl::OkStatus();
}

// Pins or unpins a prefix: the keys named, or every full chunk of --tokens.
absl::Status RunPin(Client& client, NamespaceHandle ns, const CliArgs& a, bool pin,
                    std::ostream& out) {
  const std::vector<Key128> keys = a.has_tokens ? KeyChain(a.ns).PrefixKeys(a.tokens) : a.keys;
  absl::StatusOr<uint32_t> changed = client.Pin(ns, keys, pin);
  if (!changed.ok()) return changed.status();
  out << (pin ? "pinned " : "unpinned ") << *changed << " of " << keys.size() << " chunks\n";
  return absl::OkStatus();
}

absl::Status RunEndSession(Client& client, NamespaceHandle ns, const CliArgs& a,
                           std::ostream& out) {
  if (absl::Status s = client.EndSession(ns, a.session_id); !s.ok()) return s;
  out << "ended session " << a.session_id << " of namespace " << KeyToHex(ns.id) << "\n";
  return absl::OkStatus();
}

bool NeedsNamespace(const CliArgs& a) {
  return a.command != Command::kHealth && a.command != Command::kNamespaces &&
         a.command != Command::kCluster && (a.command != Command::kStats || a.namespace_stats);
}

absl::Status Dispatch(Client& client, const CliArgs& a, std::ostream& out) {
  NamespaceHandle ns;
  if (a.namespace_id.has_value()) {
    ns.id = *a.namespace_id;  // named by id: registered by its writers, not by this tool
  } else if (NeedsNamespace(a)) {
    absl::StatusOr<NamespaceHandle> h = client.OpenNamespace(a.ns);
    if (!h.ok()) return h.status();
    ns = *h;
  }
  switch (a.command) {
    case Command::kPut:
      return RunPut(client, ns, a, out);
    case Command::kGet:
      return RunGet(client, ns, a, out);
    case Command::kLookup:
      return RunLookup(client, ns, a, out);
    case Command::kExists:
      return RunExists(client, ns, a, out);
    case Command::kDelete:
      return RunDelete(client, ns, a, out);
    case Command::kStats: {
      absl::StatusOr<ServerStats> s = client.Stats(a.namespace_stats ? &ns : nullptr);
      if (s.ok()) out << StatsText(*s);
      return s.status();
    }
    case Command::kHealth:
      return RunHealth(client, out);
    case Command::kNamespaces:
      return RunNamespaces(client, out);
    case Command::kClear:
      return RunClear(client, ns, out);
    case Command::kPin:
    case Command::kUnpin:
      return RunPin(client, ns, a, a.command == Command::kPin, out);
    case Command::kEndSession:
      return RunEndSession(client, ns, a, out);
    default:
      return absl::InvalidArgumentError("no command");
  }
}

void PrintError(const absl::Status& s, std::ostream& err) {
  err << "kvstash: error: " << absl::StatusCodeToString(s.code()) << ": " << s.message() << "\n";
}

// The client's options with --token-file's token, if given. NOT_FOUND when it cannot be read.
absl::StatusOr<ClientOptions> OptionsWithToken(const CliArgs& args) {
  ClientOptions options = args.options;
  if (args.token_file.empty()) return options;
  std::ifstream in(args.token_file);
  std::stringstream text;
  text << in.rdbuf();
  if (!in) {
    return absl::NotFoundError(absl::StrCat("--token-file ", args.token_file, ": cannot read"));
  }
  options.token = std::string(absl::StripAsciiWhitespace(text.str()));
  if (options.token.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--token-file ", args.token_file, " is empty"));
  }
  return options;
}

}  // namespace

int RunCommand(const CliArgs& args, std::ostream& out, std::ostream& err) {
  absl::StatusOr<ClientOptions> options = OptionsWithToken(args);
  if (!options.ok()) {
    PrintError(options.status(), err);
    return kExitUsage;
  }
  absl::StatusOr<std::unique_ptr<Client>> client = Client::Connect(args.server, *options);
  if (!client.ok()) {
    PrintError(client.status(), err);
    // A URI that does not parse is the user's typo, not a failed call.
    return absl::IsInvalidArgument(client.status()) ? kExitUsage : kExitCallFailed;
  }
  absl::Status s = args.command == Command::kCluster ? RunCluster(**client, *options, out)
                                                     : Dispatch(**client, args, out);
  if (!s.ok()) {
    PrintError(s, err);
    return kExitCallFailed;
  }
  return kExitOk;
}

}  // namespace kvstash::cli
