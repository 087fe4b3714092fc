// The daemon's config as a YAML file, read and written through the schema
// (config_schema.h): parsing with `--set` overrides, loading a file, emitting the
// effective config, and the documented default config.
//
// Thread-safety: pure functions.
#pragma once

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "server/config.h"

namespace kvstash::server {

// The configuration used when no --config file is given: every key at its default, each
// section and key under its documentation as comments (deploy/kvstashd.yaml is this
// text). Parses to ServerConfig{}.
std::string DefaultConfigYaml();

// Parses `yaml` (empty = all defaults), applies `overrides` in order, then validates.
// INVALID_ARGUMENT names the offending field.
absl::StatusOr<ServerConfig> ParseConfig(absl::string_view yaml,
                                         const std::vector<ConfigOverride>& overrides);
// Reads `path` and parses it as above. NOT_FOUND / INVALID_ARGUMENT name the file.
absl::StatusOr<ServerConfig> LoadConfigFile(const std::string& path,
                                            const std::vector<ConfigOverride>& overrides);

// The effective configuration as YAML; ParseConfig(EmitConfig(c), {}) yields `c` again.
// `documented`: each section and key under its documentation as comments.
std::string EmitConfig(const ServerConfig& config, bool documented = false);

}  // namespace kvstash::server
