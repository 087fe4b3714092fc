#include "server/auth/authenticator.h"

#include <atomic>
#include <fstream>
#include <sstream>
#include <thread>
#include <utility>

#include "absl/base/thread_annotations.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/file_signature.h"
#include "server/auth/token_file.h"
#include "server/log.h"

namespace kvstash::server::auth {
namespace {

absl::StatusOr<std::shared_ptr<const TokenTable>> ReadTokenFile(const std::string& path) {
  std::ifstream in(path);
  if (!in) return absl::NotFoundError(absl::StrCat(path, ": cannot open token file"));
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::DataLossError(absl::StrCat(path, ": cannot read token file"));
  absl::StatusOr<TokenTable> table = ParseTokenFile(text.str());
  if (!table.ok()) {
    return absl::Status(table.status().code(), absl::StrCat(path, ": ", table.status().message()));
  }
  return std::make_shared<const TokenTable>(*std::move(table));
}

// No token file: every call is the open principal.
class OpenAuthenticator final : public Authenticator {
 public:
  explicit OpenAuthenticator(AuthOptions options) : options_(std::move(options)) {}

  absl::StatusOr<PrincipalPtr> Authenticate(absl::string_view) const override {
    return OpenPrincipal();
  }
  absl::Status Reload() override { return absl::OkStatus(); }
  bool enabled() const override { return false; }
  const AuthOptions& options() const override { return options_; }

 private:
  const AuthOptions options_;
};

// Tokens checked against the token file's table, which Reload replaces whole.
class FileAuthenticator final : public Authenticator {
 public:
  FileAuthenticator(AuthOptions options, Logger* log, std::shared_ptr<const TokenTable> table,
                    FileSignature signature)
      : options_(std::move(options)), log_(log), table_(std::move(table)), signature_(signature) {
    if (options_.reload_interval_ms > 0) poller_ = std::thread([this] { PollLoop(); });
  }
  ~FileAuthenticator() override {
    stop_.Notify();
    if (poller_.joinable()) poller_.join();
  }

  absl::StatusOr<PrincipalPtr> Authenticate(absl::string_view token) const override;
  absl::Status Reload() override;
  bool enabled() const override { return true; }
  const AuthOptions& options() const override { return options_; }
  AuthStats stats() const override;

 private:
  void PollLoop();

  const AuthOptions options_;
  Logger* const log_;  // not owned; may be null
  mutable absl::Mutex table_mu_;
  std::shared_ptr<const TokenTable> table_ ABSL_GUARDED_BY(table_mu_);
  // Serializes reloads (poll thread vs SIGHUP) and guards what the last one saw.
  absl::Mutex reload_mu_;
  FileSignature signature_ ABSL_GUARDED_BY(reload_mu_);
  std::atomic<uint64_t> reloads_ok_{0};
  std::atomic<uint64_t> reloads_failed_{0};
  absl::Notification stop_;
  std::thread poller_;
};

absl::StatusOr<PrincipalPtr> FileAuthenticator::Authenticate(absl::string_view token) const {
  if (token.empty()) {
    if (options_.required) return absl::UnauthenticatedError("no token");
    absl::ReaderMutexLock lock(&table_mu_);
    return table_->anonymous != nullptr ? table_->anonymous : MigrationPrincipal();
  }
  const std::string digest = HashToken(token);
  absl::ReaderMutexLock lock(&table_mu_);
  auto it = table_->by_digest.find(digest);
  if (it == table_->by_digest.end()) return absl::UnauthenticatedError("unknown or revoked token");
  return it->second;
}

absl::Status FileAuthenticator::Reload() {
  absl::MutexLock reload_lock(&reload_mu_);
  // Stat before reading: a write racing the read then shows as one more change.
  signature_ = FileSignature::Of(options_.token_file);
  absl::StatusOr<std::shared_ptr<const TokenTable>> table = ReadTokenFile(options_.token_file);
  if (!table.ok()) {
    reloads_failed_.fetch_add(1, std::memory_order_relaxed);
    if (log_ != nullptr) {
      log_->Error("token file reload failed; the previous tokens stay in force",
                  {{"error", table.status()}});
    }
    return table.status();
  }
  const size_t principals = (*table)->principals.size();
  {
    absl::WriterMutexLock lock(&table_mu_);
    table_.swap(*table);
  }  // the old table is freed here, outside the lock
  reloads_ok_.fetch_add(1, std::memory_order_relaxed);
  if (log_ != nullptr) {
    log_->Info("token file reloaded", {{"path", options_.token_file}, {"principals", principals}});
  }
  return absl::OkStatus();
}

void FileAuthenticator::PollLoop() {
  const absl::Duration interval = absl::Milliseconds(options_.reload_interval_ms);
  SettledChange settle;
  while (!stop_.WaitForNotificationWithTimeout(interval)) {
    const FileSignature now = FileSignature::Of(options_.token_file);
    bool changed = false;
    {
      absl::MutexLock lock(&reload_mu_);
      changed = settle.Observe(now, signature_);
    }
    if (changed) Reload().IgnoreError();  // logged by Reload
  }
}

AuthStats FileAuthenticator::stats() const {
  AuthStats s;
  s.reloads_ok = reloads_ok_.load(std::memory_order_relaxed);
  s.reloads_failed = reloads_failed_.load(std::memory_order_relaxed);
  absl::ReaderMutexLock lock(&table_mu_);
  s.principals = table_->principals.size();
  return s;
}

}  // namespace

absl::StatusOr<std::unique_ptr<Authenticator>> Authenticator::Create(const AuthOptions& options,
                                                                     Logger* log) {
  if (options.reload_interval_ms < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "auth.reload_interval_ms: must be at least 0, got ", options.reload_interval_ms));
  }
  if (options.token_file.empty()) {
    // Required tokens with no file to check them against would let everyone in.
    if (options.required) {
      return absl::InvalidArgumentError("auth.required: needs auth.token_file");
    }
    return std::make_unique<OpenAuthenticator>(options);
  }
  const FileSignature signature = FileSignature::Of(options.token_file);
  absl::StatusOr<std::shared_ptr<const TokenTable>> table = ReadTokenFile(options.token_file);
  if (!table.ok()) return table.status();
  return std::make_unique<FileAuthenticator>(options, log, *std::move(table), signature);
}

}  // namespace kvstash::server::auth
