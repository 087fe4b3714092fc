// `kvstash token new` and `kvstash token hash`: make bearer tokens and the token file
// entries that admit them (docs/security.md, "Token file"). Local: no daemon is contacted.
//
// Thread-safety: pure functions of their arguments, apart from NewToken's randomness.
#pragma once

#include <istream>
#include <ostream>
#include <string>

#include "client/cli/args.h"

namespace kvstash::cli {

// The token file entry (a `principals:` list item, indented to paste under that key) of
// a principal holding the token whose SHA-256 is `digest`: read and write on args.tenants
// (or "default"), admin too with args.admin, trusted with args.trusted.
std::string PrincipalEntry(const CliArgs& args, const std::string& digest);

// Runs a local command. `token new` prints the token alone on `out` (so a script can
// capture it) and the entry on `err`; `token hash` reads one token from `in` and prints
// its digest. Returns the process exit code (kExitUsage when stdin holds no token).
// REQUIRES: IsLocalCommand(args.command).
int RunLocalCommand(const CliArgs& args, std::istream& in, std::ostream& out, std::ostream& err);

}  // namespace kvstash::cli
