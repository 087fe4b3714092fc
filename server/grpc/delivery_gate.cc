#include "server/grpc/delivery_gate.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <linux/sockios.h>
#include <linux/tcp.h>
#include <net/if.h>
#include <netinet/in.h>
#include <sys/ioctl.h>
#include <sys/socket.h>

#include <cstddef>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace kvstash::server {
namespace {

// gRPC's peer string for a socket address: "ipv4:127.0.0.1:5000", "ipv6:[::1]:5000".
// IPv4-mapped IPv6 addresses read as IPv4, as gRPC writes them. Empty for other families.
std::string PeerString(const sockaddr_storage& a) {
  char text[INET6_ADDRSTRLEN] = {};
  if (a.ss_family == AF_INET) {
    const auto& in = reinterpret_cast<const sockaddr_in&>(a);
    inet_ntop(AF_INET, &in.sin_addr, text, sizeof(text));
    return absl::StrCat("ipv4:", text, ":", ntohs(in.sin_port));
  }
  if (a.ss_family != AF_INET6) return "";
  const auto& in6 = reinterpret_cast<const sockaddr_in6&>(a);
  if (IN6_IS_ADDR_V4MAPPED(&in6.sin6_addr)) {
    inet_ntop(AF_INET, &in6.sin6_addr.s6_addr[12], text, sizeof(text));
    return absl::StrCat("ipv4:", text, ":", ntohs(in6.sin6_port));
  }
  inet_ntop(AF_INET6, &in6.sin6_addr, text, sizeof(text));
  std::string scope;  // link-local addresses carry their interface, as gRPC writes them
  char name[IF_NAMESIZE] = {};
  if (in6.sin6_scope_id != 0 && if_indextoname(in6.sin6_scope_id, name) != nullptr) {
    scope = absl::StrCat("%", name);
  }
  return absl::StrCat("ipv6:[", text, scope, "]:", ntohs(in6.sin6_port));
}

int PortOf(const sockaddr_storage& a) {
  if (a.ss_family == AF_INET) return ntohs(reinterpret_cast<const sockaddr_in&>(a).sin_port);
  if (a.ss_family == AF_INET6) return ntohs(reinterpret_cast<const sockaddr_in6&>(a).sin6_port);
  return 0;
}

// gRPC percent-encodes the brackets and scope separator of IPv6 peers (some releases).
std::string NormalizedPeer(absl::string_view peer) {
  return absl::StrReplaceAll(peer, {{"%5B", "["}, {"%5D", "]"}, {"%25", "%"}});
}

// True when the peer's kernel has acknowledged everything sent on `fd` and advertises at
// least `min_window` bytes, or when the socket cannot be queried any more.
bool Delivered(int fd, uint32_t min_window) {
  int unacknowledged = 0;
  if (ioctl(fd, SIOCOUTQ, &unacknowledged) != 0) return true;
  if (unacknowledged > 0) return false;
  tcp_info info = {};
  socklen_t len = sizeof(info);
  if (getsockopt(fd, IPPROTO_TCP, TCP_INFO, &info, &len) != 0) return true;
  // Kernels before 5.4 do not report the peer's window: an empty send queue has to do.
  if (len < offsetof(tcp_info, tcpi_snd_wnd) + sizeof(info.tcpi_snd_wnd)) return true;
  return info.tcpi_snd_wnd >= min_window;
}

// Peer string -> delivered (see Delivered), for every TCP connection of this process
// accepted on `port`. The descriptors belong to gRPC and are only queried, each right after
// it is identified, so a number closed and reused meanwhile is at worst misjudged for one
// round.
absl::flat_hash_map<std::string, bool> Connections(int port, uint32_t min_window) {
  absl::flat_hash_map<std::string, bool> out;
  DIR* dir = opendir("/proc/self/fd");
  if (dir == nullptr) return out;
  while (const dirent* entry = readdir(dir)) {
    int fd = -1;
    if (!absl::SimpleAtoi(entry->d_name, &fd) || fd == dirfd(dir)) continue;
    sockaddr_storage local = {}, remote = {};
    socklen_t local_len = sizeof(local), remote_len = sizeof(remote);
    if (getsockname(fd, reinterpret_cast<sockaddr*>(&local), &local_len) != 0) continue;
    if (PortOf(local) != port) continue;
    if (getpeername(fd, reinterpret_cast<sockaddr*>(&remote), &remote_len) != 0) continue;
    out[PeerString(remote)] = Delivered(fd, min_window);
  }
  closedir(dir);
  return out;
}

}  // namespace

DeliveryGate::~DeliveryGate() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
  }
  if (thread_.joinable()) thread_.join();
}

void DeliveryGate::Arm(int port, absl::Time deadline) {
  absl::MutexLock lock(&mu_);
  if (armed_ || stopping_ || port == 0) return;  // a Unix socket: nothing to hold
  armed_ = true;
  port_ = port;
  deadline_ = deadline;
  thread_ = std::thread(&DeliveryGate::Loop, this);
}

void DeliveryGate::Await(absl::string_view peer, absl::AnyInvocable<void() &&> release) {
  {
    absl::MutexLock lock(&mu_);
    if (armed_ && !stopping_ && absl::Now() < deadline_) {
      held_.push_back(Held{NormalizedPeer(peer), std::move(release)});
      return;
    }
  }
  std::move(release)();
}

bool DeliveryGate::AllDelivered() const {
  int port = 0;
  {
    absl::MutexLock lock(&mu_);
    port = port_;
  }
  if (port == 0) return true;
  for (const auto& [peer, delivered] : Connections(port, options_.min_peer_window_bytes)) {
    if (!delivered) return false;
  }
  return true;
}

void DeliveryGate::Loop() {
  for (;;) {
    for (Held& held : TakeReleased()) std::move(held.release)();
    absl::MutexLock lock(&mu_);
    if (stopping_ && held_.empty()) return;
    if (held_.empty()) {
      mu_.Await(absl::Condition(this, &DeliveryGate::HasWorkLocked));
    } else {
      mu_.AwaitWithTimeout(absl::Condition(&stopping_), options_.poll_interval);
    }
  }
}

std::vector<DeliveryGate::Held> DeliveryGate::TakeReleased() {
  int port = 0;
  size_t judged = 0;  // calls queued before the scan; later ones wait for the next round
  bool all = false;
  {
    absl::MutexLock lock(&mu_);
    if (held_.empty()) return {};
    port = port_;
    judged = held_.size();
    all = stopping_ || absl::Now() >= deadline_;
  }
  // The scan runs unlocked: only this thread removes from held_, others append.
  absl::flat_hash_map<std::string, bool> connections;
  if (!all) connections = Connections(port, options_.min_peer_window_bytes);
  absl::MutexLock lock(&mu_);
  if (stopping_) {
    all = true;
    judged = held_.size();
  }
  std::vector<Held> released, kept;
  for (size_t i = 0; i < held_.size(); ++i) {
    const auto it = connections.find(held_[i].peer);
    const bool release = i < judged && (all || it == connections.end() || it->second);
    (release ? released : kept).push_back(std::move(held_[i]));
  }
  held_ = std::move(kept);
  return released;
}

}  // namespace kvstash::server
