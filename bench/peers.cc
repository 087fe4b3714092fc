#include "bench/peers.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"

namespace kvstash::bench {
namespace {

absl::Status ErrnoStatus(const std::string& what) {
  return absl::UnavailableError(absl::StrCat(what, ": ", std::strerror(errno)));
}

iovec Piece(const void* data, size_t size) { return iovec{const_cast<void*>(data), size}; }

constexpr char kCrLf[] = "\r\n";

}  // namespace

// ---- TcpStream ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<TcpStream>> TcpStream::Connect(const std::string& host, int port) {
  int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return ErrnoStatus("socket");
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(static_cast<uint16_t>(port));
  if (inet_pton(AF_INET, host.c_str(), &addr.sin_addr) != 1) {
    close(fd);
    return absl::InvalidArgumentError("bad IPv4 address " + host);
  }
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0) {
    absl::Status s = ErrnoStatus(absl::StrCat("connect ", host, ":", port));
    close(fd);
    return s;
  }
  int one = 1;
  setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  // A stuck peer must not hang the whole run.
  timeval timeout{60, 0};
  setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, sizeof(timeout));
  setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &timeout, sizeof(timeout));
  return std::unique_ptr<TcpStream>(new TcpStream(fd));
}

TcpStream::~TcpStream() { close(fd_); }

absl::Status TcpStream::WriteAll(std::vector<iovec> pieces) {
  size_t first = 0;
  while (first < pieces.size()) {
    msghdr msg{};
    msg.msg_iov = pieces.data() + first;
    msg.msg_iovlen = std::min<size_t>(pieces.size() - first, IOV_MAX);
    ssize_t n = sendmsg(fd_, &msg, MSG_NOSIGNAL);
    if (n < 0) {
      if (errno == EINTR) continue;
      return ErrnoStatus("send");
    }
    size_t left = static_cast<size_t>(n);
    while (first < pieces.size() && left >= pieces[first].iov_len) {
      left -= pieces[first].iov_len;
      ++first;
    }
    if (left > 0) {
      pieces[first].iov_base = static_cast<char*>(pieces[first].iov_base) + left;
      pieces[first].iov_len -= left;
    }
  }
  return absl::OkStatus();
}

absl::Status TcpStream::Fill() {
  if (begin_ == end_) begin_ = end_ = 0;
  if (end_ == buf_.size()) {
    if (begin_ == 0) return absl::ResourceExhaustedError("protocol line longer than 64 KiB");
    std::memmove(buf_.data(), buf_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  while (true) {
    ssize_t n = recv(fd_, buf_.data() + end_, buf_.size() - end_, 0);
    if (n > 0) {
      end_ += static_cast<size_t>(n);
      return absl::OkStatus();
    }
    if (n == 0) return absl::UnavailableError("connection closed by peer");
    if (errno != EINTR) return ErrnoStatus("recv");
  }
}

absl::Status TcpStream::ReadLine(std::string* line) {
  size_t scanned = begin_;
  while (true) {
    for (size_t i = scanned; i + 1 < end_; ++i) {
      if (buf_[i] == '\r' && buf_[i + 1] == '\n') {
        line->assign(buf_.data() + begin_, i - begin_);
        begin_ = i + 2;
        return absl::OkStatus();
      }
    }
    scanned = end_ > begin_ ? end_ - 1 : begin_;
    size_t offset = begin_;
    absl::Status s = Fill();
    if (!s.ok()) return s;
    scanned -= offset - begin_;  // Fill may have moved the unread bytes to the front
  }
}

absl::Status TcpStream::ReadExact(char* dst, size_t n) {
  size_t buffered = std::min(n, end_ - begin_);
  if (dst != nullptr) std::memcpy(dst, buf_.data() + begin_, buffered);
  begin_ += buffered;
  size_t done = buffered;
  while (done < n) {
    if (dst == nullptr) {  // discard through the line buffer
      absl::Status s = Fill();
      if (!s.ok()) return s;
      size_t take = std::min(n - done, end_ - begin_);
      begin_ += take;
      done += take;
      continue;
    }
    ssize_t r = recv(fd_, dst + done, n - done, 0);
    if (r > 0) {
      done += static_cast<size_t>(r);
    } else if (r == 0) {
      return absl::UnavailableError("connection closed by peer");
    } else if (errno != EINTR) {
      return ErrnoStatus("recv");
    }
  }
  return absl::OkStatus();
}

// ---- Redis -------------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<RedisConn>> RedisConn::Connect(int port) {
  auto stream = TcpStream::Connect("127.0.0.1", port);
  if (!stream.ok()) return stream.status();
  return std::unique_ptr<RedisConn>(new RedisConn(*std::move(stream)));
}

absl::Status RedisConn::SendCommand(const std::vector<std::string>& args,
                                    absl::Span<const char> value) {
  const bool has_value = value.data() != nullptr;
  header_.clear();
  absl::StrAppend(&header_, "*", args.size() + (has_value ? 1 : 0), kCrLf);
  for (const std::string& a : args) absl::StrAppend(&header_, "$", a.size(), kCrLf, a, kCrLf);
  if (!has_value) return stream_->WriteAll({Piece(header_.data(), header_.size())});
  absl::StrAppend(&header_, "$", value.size(), kCrLf);
  return stream_->WriteAll(
      {Piece(header_.data(), header_.size()), Piece(value.data(), value.size()), Piece(kCrLf, 2)});
}

absl::StatusOr<std::string> RedisConn::ReadStatusLine() {
  std::string line;
  absl::Status s = stream_->ReadLine(&line);
  if (!s.ok()) return s;
  if (line.empty()) return absl::InternalError("redis: empty reply line");
  if (line[0] == '-') return absl::InternalError("redis: " + line.substr(1));
  if (line[0] != '+' && line[0] != ':') return absl::InternalError("redis: unexpected " + line);
  return line.substr(1);
}

absl::Status RedisConn::Put(const BenchKey& key, absl::Span<const char> value) {
  absl::Status s = SendCommand({"SET", KeyHex(key)}, value);
  if (!s.ok()) return s;
  absl::StatusOr<std::string> reply = ReadStatusLine();
  if (!reply.ok()) return reply.status();
  return *reply == "OK" ? absl::OkStatus() : absl::InternalError("redis SET: " + *reply);
}

absl::Status RedisConn::Get(const BenchKey& key, absl::Span<char> buf, size_t* size) {
  absl::Status s = SendCommand({"GET", KeyHex(key)}, {});
  if (!s.ok()) return s;
  std::string line;
  s = stream_->ReadLine(&line);
  if (!s.ok()) return s;
  if (line.empty() || line[0] != '$') {
    return absl::InternalError("redis GET: unexpected reply " + line.substr(0, 80));
  }
  int64_t len = 0;
  if (!absl::SimpleAtoi(absl::string_view(line).substr(1), &len)) {
    return absl::InternalError("redis GET: bad length " + line);
  }
  if (len < 0) return absl::NotFoundError("redis GET: nil");
  const size_t n = static_cast<size_t>(len);
  const bool fits = n <= buf.size();
  s = stream_->ReadExact(fits ? buf.data() : nullptr, n);
  if (s.ok()) s = stream_->ReadExact(nullptr, 2);  // trailing CRLF
  if (!s.ok()) return s;
  if (!fits) return absl::ResourceExhaustedError(absl::StrCat("value of ", n, " bytes"));
  *size = n;
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> RedisConn::Lookup(absl::Span<const BenchKey> keys) {
  std::vector<std::string> args;
  args.reserve(keys.size() + 1);
  args.push_back("EXISTS");
  for (const BenchKey& k : keys) args.push_back(KeyHex(k));
  absl::Status s = SendCommand(args, {});
  if (!s.ok()) return s;
  absl::StatusOr<std::string> reply = ReadStatusLine();
  if (!reply.ok()) return reply.status();
  uint32_t count = 0;
  if (!absl::SimpleAtoi(*reply, &count)) return absl::InternalError("redis EXISTS: " + *reply);
  return count;
}

absl::StatusOr<std::vector<bool>> RedisConn::Present(absl::Span<const BenchKey> keys) {
  header_.clear();
  for (const BenchKey& k : keys) {
    const std::string hex = KeyHex(k);
    absl::StrAppend(&header_, "*2", kCrLf, "$6", kCrLf, "EXISTS", kCrLf, "$", hex.size(), kCrLf,
                    hex, kCrLf);
  }
  absl::Status s = stream_->WriteAll({Piece(header_.data(), header_.size())});
  if (!s.ok()) return s;
  std::vector<bool> present;
  for (size_t i = 0; i < keys.size(); ++i) {
    absl::StatusOr<std::string> reply = ReadStatusLine();
    if (!reply.ok()) return reply.status();
    present.push_back(*reply != "0");
  }
  return present;
}

absl::Status RedisConn::FlushAll() {
  absl::Status s = SendCommand({"FLUSHALL", "SYNC"}, {});
  if (!s.ok()) return s;
  return ReadStatusLine().status();
}

absl::Status RedisConn::Ping() {
  absl::Status s = SendCommand({"PING"}, {});
  if (!s.ok()) return s;
  return ReadStatusLine().status();
}

// ---- memcached ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<MemcachedConn>> MemcachedConn::Connect(int port) {
  auto stream = TcpStream::Connect("127.0.0.1", port);
  if (!stream.ok()) return stream.status();
  return std::unique_ptr<MemcachedConn>(new MemcachedConn(*std::move(stream)));
}

absl::Status MemcachedConn::Put(const BenchKey& key, absl::Span<const char> value) {
  header_ = absl::StrCat("set ", KeyHex(key), " 0 0 ", value.size(), kCrLf);
  absl::Status s = stream_->WriteAll(
      {Piece(header_.data(), header_.size()), Piece(value.data(), value.size()), Piece(kCrLf, 2)});
  if (!s.ok()) return s;
  std::string line;
  s = stream_->ReadLine(&line);
  if (!s.ok()) return s;
  return line == "STORED" ? absl::OkStatus() : absl::InternalError("memcached set: " + line);
}

absl::Status MemcachedConn::Get(const BenchKey& key, absl::Span<char> buf, size_t* size) {
  header_ = absl::StrCat("get ", KeyHex(key), kCrLf);
  absl::Status s = stream_->WriteAll({Piece(header_.data(), header_.size())});
  if (!s.ok()) return s;
  std::string line;
  s = stream_->ReadLine(&line);
  if (!s.ok()) return s;
  if (line == "END") return absl::NotFoundError("memcached get: miss");
  // VALUE <key> <flags> <bytes>
  std::vector<absl::string_view> parts = absl::StrSplit(line, ' ');
  size_t n = 0;
  if (parts.size() < 4 || parts[0] != "VALUE" || !absl::SimpleAtoi(parts[3], &n)) {
    return absl::InternalError("memcached get: unexpected " + line.substr(0, 80));
  }
  const bool fits = n <= buf.size();
  s = stream_->ReadExact(fits ? buf.data() : nullptr, n);
  if (s.ok()) s = stream_->ReadExact(nullptr, 2);
  if (s.ok()) s = stream_->ReadLine(&line);
  if (!s.ok()) return s;
  if (line != "END") return absl::InternalError("memcached get: no END but " + line);
  if (!fits) return absl::ResourceExhaustedError(absl::StrCat("value of ", n, " bytes"));
  *size = n;
  return absl::OkStatus();
}

absl::StatusOr<uint32_t> MemcachedConn::Lookup(absl::Span<const BenchKey> keys) {
  absl::StatusOr<std::vector<bool>> present = Present(keys);
  if (!present.ok()) return present.status();
  return static_cast<uint32_t>(std::count(present->begin(), present->end(), true));
}

absl::StatusOr<std::vector<bool>> MemcachedConn::Present(absl::Span<const BenchKey> keys) {
  header_.clear();
  for (const BenchKey& k : keys) absl::StrAppend(&header_, "mg ", KeyHex(k), kCrLf);
  absl::StrAppend(&header_, "mn", kCrLf);
  absl::Status s = stream_->WriteAll({Piece(header_.data(), header_.size())});
  if (!s.ok()) return s;
  std::vector<bool> present;
  std::string line;
  while (true) {
    s = stream_->ReadLine(&line);
    if (!s.ok()) return s;
    if (line == "MN") break;
    if (line != "HD" && line != "EN")
      return absl::InternalError("memcached mg: unexpected " + line);
    present.push_back(line == "HD");
  }
  if (present.size() != keys.size()) return absl::InternalError("memcached mg: reply count");
  return present;
}

absl::Status MemcachedConn::Version(std::string* version) {
  header_ = absl::StrCat("version", kCrLf);
  absl::Status s = stream_->WriteAll({Piece(header_.data(), header_.size())});
  if (!s.ok()) return s;
  s = stream_->ReadLine(version);
  if (!s.ok()) return s;
  return absl::StartsWith(*version, "VERSION") ? absl::OkStatus()
                                               : absl::InternalError("memcached: " + *version);
}

}  // namespace kvstash::bench
