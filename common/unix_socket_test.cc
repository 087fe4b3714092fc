#include "common/unix_socket.h"

#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstring>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "gtest/gtest.h"
#include "testing/temp_dir.h"

namespace kvstash {
namespace {

// A socket bound at `path`, listening when `listen_too`; closed by the destructor.
struct BoundSocket {
  BoundSocket(const std::string& path, bool listen_too) {
    fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::memcpy(addr.sun_path, path.data(), path.size());
    bound = bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0;
    if (listen_too) bound = bound && listen(fd, 4) == 0;
  }
  ~BoundSocket() { close(fd); }
  int fd = -1;
  bool bound = false;
};

std::unique_ptr<TempDir> NewDir() {
  absl::StatusOr<std::unique_ptr<TempDir>> dir = TempDir::Create("unix-socket-test");
  EXPECT_TRUE(dir.ok()) << dir.status();
  return *std::move(dir);
}

TEST(UnixSocketTest, PathMustBeAbsoluteAndFitASocketAddress) {
  EXPECT_TRUE(CheckSocketPath("/run/kvstash/kvstash.sock").ok());
  EXPECT_TRUE(absl::IsInvalidArgument(CheckSocketPath("")));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckSocketPath("run/kvstash.sock")));
  EXPECT_TRUE(absl::IsInvalidArgument(CheckSocketPath(std::string("/a\0b", 4))));
  EXPECT_TRUE(CheckSocketPath("/" + std::string(106, 'a')).ok());
  absl::Status s = CheckSocketPath("/" + std::string(107, 'a'));
  EXPECT_TRUE(absl::IsInvalidArgument(s));
  EXPECT_NE(s.message().find("at most 107"), absl::string_view::npos) << s;
}

TEST(UnixSocketTest, ClaimsAFreePathAndRefusesAMissingDirectory) {
  std::unique_ptr<TempDir> dir = NewDir();
  EXPECT_TRUE(ClaimSocketPath(dir->Sub("k.sock")).ok());
  absl::Status s = ClaimSocketPath(dir->Sub("missing/k.sock"));
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("does not exist"), absl::string_view::npos) << s;
}

// ClaimSocketPath refuses `path` as served by another process and leaves the socket there.
void ExpectClaimRefusedAsServed(const std::string& path) {
  absl::Status s = ClaimSocketPath(path);
  EXPECT_TRUE(absl::IsUnavailable(s)) << s;
  EXPECT_NE(s.message().find("another process serves"), absl::string_view::npos) << s;
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << "a live socket must stay";
}

TEST(UnixSocketTest, RefusesAPathAnotherProcessServes) {
  std::unique_ptr<TempDir> dir = NewDir();
  const std::string path = dir->Sub("k.sock");
  BoundSocket live(path, /*listen_too=*/true);
  ASSERT_TRUE(live.bound);
  ExpectClaimRefusedAsServed(path);
}

TEST(UnixSocketTest, AFullBacklogCountsAsServed) {
  std::unique_ptr<TempDir> dir = NewDir();
  const std::string path = dir->Sub("k.sock");
  BoundSocket live(path, /*listen_too=*/false);
  ASSERT_TRUE(live.bound);
  ASSERT_EQ(listen(live.fd, 0), 0);
  std::vector<int> waiting;  // connections nobody accepts, until connecting says EAGAIN
  for (int i = 0; i < 8; ++i) {
    const int fd = ConnectUnix(path);
    if (fd < 0) {
      EXPECT_EQ(errno, EAGAIN);
      break;
    }
    waiting.push_back(fd);
  }
  ExpectClaimRefusedAsServed(path);
  for (int fd : waiting) close(fd);
}

TEST(UnixSocketTest, RemovesAStaleSocket) {
  std::unique_ptr<TempDir> dir = NewDir();
  const std::string path = dir->Sub("k.sock");
  { BoundSocket dead(path, /*listen_too=*/false); }  // bound, never listened: refuses
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(ClaimSocketPath(path).ok());
  EXPECT_NE(lstat(path.c_str(), &st), 0);
}

TEST(UnixSocketTest, RefusesAFileThatIsNotASocket) {
  std::unique_ptr<TempDir> dir = NewDir();
  const std::string path = dir->Sub("k.sock");
  std::ofstream(path) << "data";
  EXPECT_TRUE(absl::IsInvalidArgument(ClaimSocketPath(path)));
  struct stat st {};
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << "the file must stay";
}

TEST(UnixSocketTest, AdoptSetsTheModeAndRemoveSparesASuccessor) {
  std::unique_ptr<TempDir> dir = NewDir();
  const std::string path = dir->Sub("k.sock");
  BoundSocket first(path, /*listen_too=*/true);
  absl::StatusOr<SocketFile> ours = AdoptSocketPath(path, 0666);
  ASSERT_TRUE(ours.ok()) << ours.status();
  struct stat st {};
  ASSERT_EQ(lstat(path.c_str(), &st), 0);
  EXPECT_EQ(st.st_mode & 0777, 0666u);
  // Another daemon took the path over while ours still exists elsewhere.
  ASSERT_EQ(rename(path.c_str(), dir->Sub("moved.sock").c_str()), 0);
  BoundSocket successor(path, /*listen_too=*/true);
  ASSERT_TRUE(successor.bound);
  RemoveSocketPath(path, *ours);
  EXPECT_EQ(lstat(path.c_str(), &st), 0) << "another daemon's socket must stay";
  absl::StatusOr<SocketFile> theirs = AdoptSocketPath(path, 0666);
  ASSERT_TRUE(theirs.ok()) << theirs.status();
  RemoveSocketPath(path, *theirs);
  EXPECT_NE(lstat(path.c_str(), &st), 0);
  EXPECT_TRUE(absl::IsUnavailable(AdoptSocketPath(path, 0666).status()));
}

}  // namespace
}  // namespace kvstash
