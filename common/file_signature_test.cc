#include "common/file_signature.h"

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "gtest/gtest.h"
#include "testing/temp_dir.h"

namespace kvstash {
namespace {

void Write(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::trunc) << text;
}

TEST(FileSignatureTest, SeesInPlaceWritesRenamesAndRemoval) {
  auto dir = TempDir::Create("kvstash-filesig");
  ASSERT_TRUE(dir.ok()) << dir.status();
  const std::string path = (*dir)->Sub("tokens.yaml");
  EXPECT_FALSE(FileSignature::Of(path).exists);
  EXPECT_EQ(FileSignature::Of(path), FileSignature());
  Write(path, "a");
  const FileSignature first = FileSignature::Of(path);
  EXPECT_TRUE(first.exists);
  EXPECT_EQ(first.size, 1);
  EXPECT_EQ(FileSignature::Of(path), first);
  Write(path, "ab");
  const FileSignature grown = FileSignature::Of(path);
  EXPECT_NE(grown, first);
  // Same size, renamed into place: a new inode.
  Write((*dir)->Sub("next"), "cd");
  ASSERT_EQ(::rename((*dir)->Sub("next").c_str(), path.c_str()), 0);
  const FileSignature renamed = FileSignature::Of(path);
  EXPECT_EQ(renamed.size, grown.size);
  EXPECT_NE(renamed.inode, grown.inode);
  ASSERT_EQ(::unlink(path.c_str()), 0);
  EXPECT_FALSE(FileSignature::Of(path).exists);
}

FileSignature Sig(off_t size) {
  FileSignature s;
  s.exists = true;
  s.inode = 7;
  s.size = size;
  s.mtime_ns = size * 1000;
  return s;
}

TEST(SettledChangeTest, ReportsAChangeOnlyOnceTwoPollsAgree) {
  SettledChange settle;
  const FileSignature loaded = Sig(10);
  EXPECT_FALSE(settle.Observe(loaded, loaded));
  // Half written, then complete before the next poll: the half is never reported.
  EXPECT_FALSE(settle.Observe(Sig(5), loaded));
  EXPECT_FALSE(settle.Observe(Sig(20), loaded));
  EXPECT_TRUE(settle.Observe(Sig(20), loaded));
  // Reported once: the caller reads it and passes it as loaded from then on.
  EXPECT_FALSE(settle.Observe(Sig(20), Sig(20)));
  // A change undone before it settled is forgotten.
  EXPECT_FALSE(settle.Observe(Sig(30), Sig(20)));
  EXPECT_FALSE(settle.Observe(Sig(20), Sig(20)));
  EXPECT_FALSE(settle.Observe(Sig(30), Sig(20)));
  EXPECT_TRUE(settle.Observe(Sig(30), Sig(20)));
  // Removal settles like any other change.
  EXPECT_FALSE(settle.Observe(FileSignature(), Sig(30)));
  EXPECT_TRUE(settle.Observe(FileSignature(), Sig(30)));
}

}  // namespace
}  // namespace kvstash
