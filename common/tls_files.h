// TLS files (PEM certificates, CA bundles and private keys) checked up front, so a daemon
// or client with a missing, unreadable or mismatched file fails at start with a message
// naming the setting and the file, instead of every handshake failing later.
//
// Thread-safety: functions of their arguments (they read the files).
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash {

// The contents of `path`, which must hold at least one PEM certificate. `setting` names
// where the path came from (e.g. "server.tls.cert_file"). INVALID_ARGUMENT naming both.
absl::StatusOr<std::string> ReadCertificates(absl::string_view setting, const std::string& path);

// The contents of `key_path`, a PEM private key that belongs to the first (leaf)
// certificate of `cert_path`. INVALID_ARGUMENT naming the setting and file at fault.
absl::StatusOr<std::string> ReadMatchingKey(absl::string_view cert_setting,
                                            const std::string& cert_path,
                                            absl::string_view key_setting,
                                            const std::string& key_path);

}  // namespace kvstash
