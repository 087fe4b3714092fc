// Minimal blocking clients for the peer systems the benchmark compares against: Redis
// (RESP2: SET, GET, EXISTS, FLUSHALL) and memcached (text protocol: set, get; meta `mg`
// for lookups). Values go to the socket straight from the caller's buffer (writev) and
// come back straight into the caller's buffer, so the client side copies no more than a
// kvstash client does.
//
// Thread-safety: none; each connection belongs to one thread.
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/types/span.h"
#include "bench/workload.h"

namespace kvstash::bench {

// A blocking TCP connection with a small read buffer for protocol lines.
class TcpStream {
 public:
  static absl::StatusOr<std::unique_ptr<TcpStream>> Connect(const std::string& host, int port);
  ~TcpStream();
  TcpStream(const TcpStream&) = delete;
  TcpStream& operator=(const TcpStream&) = delete;

  // Sends every byte of every piece, in order.
  absl::Status WriteAll(std::vector<iovec> pieces);
  // Next line without its "\r\n".
  absl::Status ReadLine(std::string* line);
  // Exactly n bytes into dst (dst == nullptr discards them).
  absl::Status ReadExact(char* dst, size_t n);

 private:
  explicit TcpStream(int fd) : fd_(fd), buf_(64 << 10) {}
  absl::Status Fill();

  int fd_;
  std::vector<char> buf_;
  size_t begin_ = 0, end_ = 0;  // unread bytes are buf_[begin_, end_)
};

class RedisConn : public Conn {
 public:
  static absl::StatusOr<std::unique_ptr<RedisConn>> Connect(int port);

  absl::Status Put(const BenchKey& key, absl::Span<const char> value) override;
  absl::Status Get(const BenchKey& key, absl::Span<char> buf, size_t* size) override;
  // EXISTS over all keys.
  absl::StatusOr<uint32_t> Lookup(absl::Span<const BenchKey> keys) override;
  // One pipelined EXISTS per key.
  absl::StatusOr<std::vector<bool>> Present(absl::Span<const BenchKey> keys) override;
  absl::Status FlushAll();
  absl::Status Ping();

 private:
  explicit RedisConn(std::unique_ptr<TcpStream> s) : stream_(std::move(s)) {}
  // Sends one command whose last argument may be a large value sent without copying.
  absl::Status SendCommand(const std::vector<std::string>& args, absl::Span<const char> value);
  // Reads a simple-string or integer reply line; maps "-ERR" replies to errors.
  absl::StatusOr<std::string> ReadStatusLine();

  std::unique_ptr<TcpStream> stream_;
  std::string header_;  // scratch for command framing
};

class MemcachedConn : public Conn {
 public:
  static absl::StatusOr<std::unique_ptr<MemcachedConn>> Connect(int port);

  absl::Status Put(const BenchKey& key, absl::Span<const char> value) override;
  absl::Status Get(const BenchKey& key, absl::Span<char> buf, size_t* size) override;
  // Pipelined meta gets without value (`mg <key>` per key, then `mn`).
  absl::StatusOr<uint32_t> Lookup(absl::Span<const BenchKey> keys) override;
  // The same pipelined meta gets, per key.
  absl::StatusOr<std::vector<bool>> Present(absl::Span<const BenchKey> keys) override;
  absl::Status Version(std::string* version);

 private:
  explicit MemcachedConn(std::unique_ptr<TcpStream> s) : stream_(std::move(s)) {}

  std::unique_ptr<TcpStream> stream_;
  std::string header_;
};

}  // namespace kvstash::bench
