#include "testing/temp_dir.h"

#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace kvstash {
namespace {

bool IsDir(const std::string& path) {
  struct stat st;
  return stat(path.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

TEST(TempDirTest, RemovedWithItsContents) {
  std::string path;
  {
    auto dir = TempDir::Create("temp-dir-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = (*dir)->path();
    ASSERT_TRUE(IsDir(path));
    std::filesystem::create_directory((*dir)->Sub("data"));
    std::ofstream((*dir)->Sub("data/file")) << "bytes";
  }
  EXPECT_FALSE(IsDir(path));
}

TEST(TempDirTest, KeptWhenAsked) {
  std::string path;
  {
    auto dir = TempDir::Create("temp-dir-test");
    ASSERT_TRUE(dir.ok()) << dir.status();
    path = (*dir)->path();
    (*dir)->Keep();
  }
  EXPECT_TRUE(IsDir(path));
  std::filesystem::remove_all(path);
}

TEST(TempDirTest, UnderTheGivenParentWithThePrefix) {
  auto parent = TempDir::Create("temp-dir-parent");
  ASSERT_TRUE(parent.ok()) << parent.status();
  auto dir = TempDir::Create("child", (*parent)->path());
  ASSERT_TRUE(dir.ok()) << dir.status();
  EXPECT_EQ((*dir)->path().rfind((*parent)->path() + "/child.", 0), 0u) << (*dir)->path();
  EXPECT_TRUE(IsDir((*dir)->path()));
}

TEST(TempDirTest, FailsUnderAMissingParent) {
  EXPECT_FALSE(TempDir::Create("x", "/nonexistent/kvstash-temp-dir-test").ok());
}

}  // namespace
}  // namespace kvstash
