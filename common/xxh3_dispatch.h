// XXH3 with the widest SIMD variant the CPU runs, chosen at run time. Include this instead
// of <xxhash.h> wherever payloads are hashed.
//
// Debian's libxxhash is built for baseline x86-64 (SSE2: ~15 GB/s per core on the build
// hosts). Its x86 dispatch entry points pick AVX2 or AVX-512 at run time (~24 GB/s), and
// xxh_x86dispatch.h maps the usual names (XXH3_64bits, XXH3_64bits_update, XXH3_128bits
// and the rest) onto them. Same hash values on every path; proto/xxh3_dispatch_test.cc pins them.
//
// Thread-safety: functions of their arguments. The library picks its variant on the first
// call (a benign race on x86: every caller stores the same choice).
#pragma once

#define XXH_STATIC_LINKING_ONLY  // XXH3_state_t by value: no malloc per hash
#include <xxhash.h>

#if defined(__x86_64__) || defined(__i386__)
#include <xxh_x86dispatch.h>
#endif
