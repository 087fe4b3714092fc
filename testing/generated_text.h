// Files that hold generated text (README.md's option tables, deploy/kvstashd.yaml): a test
// checks that the generated part is what the generator makes now, and rewrites it instead
// when KVSTASH_UPDATE_GENERATED=1 is in the environment (scripts/config_docs.sh).
//
// Thread-safety: functions of their arguments and the file system.
#pragma once

#include <string>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

namespace kvstash {

// The Markdown comments around a generated part of a README.
inline constexpr char kGeneratedBegin[] = "<!-- BEGIN GENERATED: scripts/config_docs.sh -->\n";
inline constexpr char kGeneratedEnd[] = "<!-- END GENERATED -->";
// What a failed check says to do.
inline constexpr char kRegenerate[] = "run scripts/config_docs.sh to regenerate it";

// The generated part of the file at `path` starts right after the first occurrence of
// `after` and runs up to the next occurrence of `until` (to the end of the file when
// `until` is empty). OK when it is `generated`; when updating, the part is rewritten to
// `generated` first. FAILED_PRECONDITION names the file, its first differing line and
// `regenerate` (how to fix it); NOT_FOUND when the file or a marker is missing.
absl::Status CheckGeneratedPart(const std::string& path, absl::string_view after,
                                absl::string_view until, const std::string& generated,
                                absl::string_view regenerate);

}  // namespace kvstash
