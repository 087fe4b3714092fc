// CRC32C for RocksDB in hardware.
//
// RocksDB checksums every record it writes with CRC32C (WAL, SST blocks, and each blob
// record: the whole payload of a demoted chunk). Debian's librocksdb is built portable,
// without SSE4.2, and computes it with a table-driven loop at ~0.6 GB/s: profiles of
// sustained demotion showed that loop taking ~45% of the daemon's CPU, with the flush
// thread, which writes the blobs, saturated on it.
//
// kvstash_storage therefore defines rocksdb::crc32c::Extend, the function every CRC32C in
// RocksDB 7.x goes through (its callers in librocksdb call it through the PLT), so the
// dynamic linker binds those calls to this definition: the SSE4.2 `crc32` instruction over
// three interleaved lanes on CPUs that have it, RocksDB's own implementation (found with
// dlsym(RTLD_NEXT)) otherwise.
// The result is the same CRC32C either way; the tests check it against a bitwise reference
// and that RocksDB's calls resolve here.
//
// Thread-safety: stateless, thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>

namespace kvstash::storage {

// "sse4.2" when RocksDB's CRC32C runs on the CPU's instruction, "rocksdb" when it runs on
// RocksDB's own code (CPU without SSE4.2, or the override not bound). Referencing it also
// keeps the override linked into every binary that uses the NVMe tier.
const char* RocksDbCrc32cImplementation();

// CRC32C of `data` continuing from `crc` (0 to start), as RocksDB's crc32c::Extend.
uint32_t Crc32cExtend(uint32_t crc, const char* data, size_t n);

}  // namespace kvstash::storage
