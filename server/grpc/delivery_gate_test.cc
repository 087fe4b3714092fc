// DeliveryGate over real loopback TCP connections: a call is held while its connection's
// send queue is not acknowledged, released once the peer has read everything, at the
// deadline, or at once when there is nothing to wait for.
#include "server/grpc/delivery_gate.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/synchronization/notification.h"
#include "gtest/gtest.h"

namespace kvstash::server {
namespace {

int Port(int fd, bool peer) {
  sockaddr_in a = {};
  socklen_t len = sizeof(a);
  peer ? getpeername(fd, reinterpret_cast<sockaddr*>(&a), &len)
       : getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// One accepted loopback connection: `served` is the listener's side (the daemon's), `peer`
// the client's.
class Connection {
 public:
  Connection() {
    listener_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_in a = {};
    a.sin_family = AF_INET;
    a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(listener_, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    listen(listener_, 1);
    a.sin_port = htons(static_cast<uint16_t>(Port(listener_, false)));
    peer = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    connect(peer, reinterpret_cast<sockaddr*>(&a), sizeof(a));
    served = accept4(listener_, nullptr, nullptr, SOCK_CLOEXEC);
  }
  ~Connection() {
    for (int fd : {served, peer, listener_}) {
      if (fd >= 0) close(fd);
    }
  }
  int listener_port() const { return Port(listener_, false); }
  // gRPC's peer string for the client's end.
  std::string grpc_peer() const { return absl::StrCat("ipv4:127.0.0.1:", Port(peer, false)); }

  // Writes from the served side until the socket buffers on both ends are full.
  size_t FillFromServed() {
    fcntl(served, F_SETFL, fcntl(served, F_GETFL) | O_NONBLOCK);
    const std::string block(64 << 10, 'x');
    size_t total = 0;
    for (;;) {
      const ssize_t n = send(served, block.data(), block.size(), MSG_NOSIGNAL);
      if (n <= 0) return total;
      total += static_cast<size_t>(n);
    }
  }
  // Reads `bytes` on the client's side.
  void DrainPeer(size_t bytes) {
    std::vector<char> buf(1 << 20);
    while (bytes > 0) {
      const ssize_t n = read(peer, buf.data(), std::min(buf.size(), bytes));
      if (n <= 0) return;
      bytes -= static_cast<size_t>(n);
    }
  }

  int served = -1;
  int peer = -1;

 private:
  int listener_ = -1;
};

TEST(DeliveryGateTest, ReleasesInlineWhenNotArmed) {
  DeliveryGate gate;
  bool released = false;
  gate.Await("ipv4:127.0.0.1:1", [&] { released = true; });
  EXPECT_TRUE(released);
}

TEST(DeliveryGateTest, ReleasesInlineForUnixListener) {
  DeliveryGate gate;
  gate.Arm(0, absl::Now() + absl::Minutes(1));
  bool released = false;
  gate.Await("unix:/tmp/kvstash.sock", [&] { released = true; });
  EXPECT_TRUE(released);
}

TEST(DeliveryGateTest, ReleasesUnknownPeerOnNextCheck) {
  Connection c;
  DeliveryGate gate;
  gate.Arm(c.listener_port(), absl::Now() + absl::Minutes(1));
  absl::Notification released;
  gate.Await("ipv4:192.0.2.1:9", [&] { released.Notify(); });
  EXPECT_TRUE(released.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(DeliveryGateTest, HoldsUntilThePeerHasReadEverything) {
  Connection c;
  const size_t queued = c.FillFromServed();
  ASSERT_GT(queued, 0u);
  DeliveryGate gate;
  gate.Arm(c.listener_port(), absl::Now() + absl::Minutes(1));
  absl::Notification released;
  gate.Await(c.grpc_peer(), [&] { released.Notify(); });
  EXPECT_FALSE(released.WaitForNotificationWithTimeout(absl::Milliseconds(200)))
      << "released with " << queued << " bytes not read by the peer";
  c.DrainPeer(queued);
  EXPECT_TRUE(released.WaitForNotificationWithTimeout(absl::Seconds(30)));
}

TEST(DeliveryGateTest, ReleasesAtTheDeadline) {
  Connection c;
  ASSERT_GT(c.FillFromServed(), 0u);
  DeliveryGate gate;
  const absl::Time deadline = absl::Now() + absl::Milliseconds(300);
  gate.Arm(c.listener_port(), deadline);
  absl::Notification released;
  gate.Await(c.grpc_peer(), [&] { released.Notify(); });
  EXPECT_TRUE(released.WaitForNotificationWithTimeout(absl::Seconds(30)));
  EXPECT_GE(absl::Now(), deadline);
}

TEST(DeliveryGateTest, AllDeliveredFollowsEveryConnection) {
  Connection quiet, busy;
  DeliveryGate unarmed;
  EXPECT_TRUE(unarmed.AllDelivered());
  DeliveryGate gate;
  gate.Arm(busy.listener_port(), absl::Now() + absl::Minutes(1));
  EXPECT_TRUE(gate.AllDelivered());
  const size_t queued = busy.FillFromServed();
  EXPECT_FALSE(gate.AllDelivered());
  busy.DrainPeer(queued);
  bool delivered = false;
  for (int i = 0; i < 3000 && !delivered; ++i) {
    delivered = gate.AllDelivered();
    if (!delivered) absl::SleepFor(absl::Milliseconds(1));
  }
  EXPECT_TRUE(delivered);
}

TEST(DeliveryGateTest, DestructionReleasesHeldCalls) {
  Connection c;
  ASSERT_GT(c.FillFromServed(), 0u);
  std::atomic<int> released{0};
  {
    DeliveryGate gate;
    gate.Arm(c.listener_port(), absl::Now() + absl::Minutes(1));
    for (int i = 0; i < 3; ++i) gate.Await(c.grpc_peer(), [&] { ++released; });
  }
  EXPECT_EQ(released.load(), 3);
}

}  // namespace
}  // namespace kvstash::server
