// Unix socket paths as the daemon's server.local_socket and the client's unix:// URIs name
// them, and the daemon's claim on one: a listener must not take over a path another live
// daemon serves (gRPC removes whatever socket is there before it binds).
//
// Thread-safety: functions of their arguments (and of the file system).
#pragma once

#include <sys/types.h>

#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"

namespace kvstash {

// INVALID_ARGUMENT saying why `path` cannot name a Unix socket: not absolute, longer than
// a socket address holds (107 bytes), or holding a NUL.
absl::Status CheckSocketPath(absl::string_view path);

// A close-on-exec, non-blocking stream socket connected to `path` (CheckSocketPath
// holds), or -1 with errno set: EAGAIN when the listener's backlog is full, so that a
// stalled listener cannot block the caller.
int ConnectUnix(const std::string& path);

// What a failed ConnectUnix's `err` (errno) means, as a sentence fragment: "no socket
// there ..." for ENOENT, "nothing listens there ..." for ECONNREFUSED, else the error.
std::string ConnectUnixError(int err);

// The socket beside `local_socket` where same-host clients ask for the daemon's arena
// (docs/protocol.md, "Local arena"): the same path with ".arena" appended.
std::string ArenaSocketPath(absl::string_view local_socket);

// Writes all of `bytes` to the blocking stream socket `sock`, passing a duplicate of `fd`
// (SCM_RIGHTS) with the first byte when fd >= 0. UNAVAILABLE with the error otherwise.
absl::Status SendWithFd(int sock, absl::string_view bytes, int fd);

// Reads up to `n` bytes from the blocking stream socket `sock` (one recvmsg); a descriptor
// passed with them is stored, close-on-exec, in `*fd` (else -1). Returns recvmsg's count
// (0: end of stream) or -1 with errno set.
long RecvWithFd(int sock, void* data, size_t n, int* fd);

// Reads exactly `n` bytes from the stream socket `fd` by `deadline`, each wait polling
// `spin_us` before it sleeps (WaitReadable); a descriptor passed with them goes to
// `*passed` (the first one; later ones, or all when `passed` is null, are closed).
// DEADLINE_EXCEEDED, or UNAVAILABLE when the peer closed the connection or it failed.
absl::Status RecvAll(int fd, void* data, size_t n, absl::Time deadline, int spin_us, int* passed);

// Waits until `fd` is readable (or hung up): first polls without sleeping for up to
// `spin_us`, so that an answer due within microseconds costs no wake-up of the thread, then
// sleeps up to `timeout_ms` (-1: no limit). poll(2)'s result: > 0 readable, 0 timed out,
// < 0 an error (EINTR included).
int WaitReadable(int fd, int spin_us, int timeout_ms);

// Which file a socket path names, so that it is removed only while it is still ours.
struct SocketFile {
  dev_t dev = 0;
  ino_t ino = 0;
};

// Before binding `path`: OK when nothing is there or a socket that refuses connections (a
// dead daemon's, removed here). UNAVAILABLE when the directory is missing, another process
// accepts connections there, or connecting fails otherwise (the socket is left alone);
// INVALID_ARGUMENT when a file other than a socket is there.
absl::Status ClaimSocketPath(const std::string& path);

// After binding: sets the socket's mode (connecting takes write permission on it) and
// returns its identity. UNAVAILABLE when it is gone or the mode cannot be set.
absl::StatusOr<SocketFile> AdoptSocketPath(const std::string& path, mode_t mode);

// Removes `path` when it is still the socket `ours`, so a stopping daemon leaves no stale
// file. Call it while still accepting there: ClaimSocketPath then refuses any successor,
// and the inode number of a removed socket may come back for another.
void RemoveSocketPath(const std::string& path, const SocketFile& ours);

}  // namespace kvstash
