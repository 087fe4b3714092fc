#include "common/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>

#include "common/unix_socket.h"
#include "gtest/gtest.h"

namespace kvstash {
namespace {

constexpr size_t kBytes = 4 << 12;

// A memfd of kBytes mapped shared and read-write, as an allocator of shared memory maps it.
struct SharedFile {
  SharedFile() {
    fd = memfd_create("mapped-file-test", MFD_CLOEXEC);
    if (fd >= 0 && ftruncate(fd, kBytes) == 0) {
      void* p = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
      data = p == MAP_FAILED ? nullptr : static_cast<uint8_t*>(p);
    }
  }
  ~SharedFile() {
    if (data != nullptr) munmap(data, kBytes);
    if (fd >= 0) close(fd);
  }
  int fd = -1;
  uint8_t* data = nullptr;
};

TEST(MappedFileTest, ReopensTheFileBehindASharedMappingReadOnly) {
  SharedFile shared;
  ASSERT_NE(shared.data, nullptr);
  absl::StatusOr<MappedFile> file = ReopenMappedFile(shared.data + 4096 + 10, O_RDONLY);
  ASSERT_TRUE(file.ok()) << file.status();
  EXPECT_EQ(file->offset, 4096u + 10);
  struct stat a {
  }, b{};
  ASSERT_EQ(fstat(shared.fd, &a), 0);
  ASSERT_EQ(fstat(file->fd, &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_EQ(fcntl(file->fd, F_GETFL) & O_ACCMODE, O_RDONLY);
  // A writable mapping of the read-only descriptor is refused; a read-only one sees writes.
  EXPECT_EQ(mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_SHARED, file->fd, 0), MAP_FAILED);
  void* view = mmap(nullptr, kBytes, PROT_READ, MAP_SHARED, file->fd, 0);
  ASSERT_NE(view, MAP_FAILED);
  std::memcpy(shared.data + 4096, "arena", 5);
  EXPECT_EQ(std::memcmp(static_cast<uint8_t*>(view) + 4096, "arena", 5), 0);
  munmap(view, kBytes);
  close(file->fd);
}

TEST(MappedFileTest, RefusesMemoryNoFileBacks) {
  void* anon = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  ASSERT_NE(anon, MAP_FAILED);
  absl::StatusOr<MappedFile> file = ReopenMappedFile(anon, O_RDONLY);
  EXPECT_EQ(file.status().code(), absl::StatusCode::kFailedPrecondition) << file.status();
  munmap(anon, kBytes);
  int on_stack = 0;
  EXPECT_EQ(ReopenMappedFile(&on_stack, O_RDONLY).status().code(),
            absl::StatusCode::kFailedPrecondition);
}

TEST(MappedFileTest, ADescriptorTravelsOverAUnixSocket) {
  SharedFile shared;
  ASSERT_GE(shared.fd, 0);
  int pair[2];
  ASSERT_EQ(socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair), 0);
  ASSERT_TRUE(SendWithFd(pair[0], "hello", shared.fd).ok());
  char got[8] = {};
  int fd = -1;
  ASSERT_EQ(RecvWithFd(pair[1], got, sizeof(got), &fd), 5);
  EXPECT_EQ(std::string(got, 5), "hello");
  ASSERT_GE(fd, 0);
  struct stat a {
  }, b{};
  ASSERT_EQ(fstat(shared.fd, &a), 0);
  ASSERT_EQ(fstat(fd, &b), 0);
  EXPECT_EQ(a.st_ino, b.st_ino);
  EXPECT_NE(fcntl(fd, F_GETFD) & FD_CLOEXEC, 0);
  close(fd);
  // Without a descriptor, none is reported.
  ASSERT_TRUE(SendWithFd(pair[0], "x", -1).ok());
  EXPECT_EQ(RecvWithFd(pair[1], got, sizeof(got), &fd), 1);
  EXPECT_EQ(fd, -1);
  close(pair[0]);
  close(pair[1]);
}

}  // namespace
}  // namespace kvstash
