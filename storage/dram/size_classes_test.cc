#include "storage/dram/size_classes.h"

#include "gtest/gtest.h"

namespace kvstash::storage {
namespace {

class SizeClassesTest : public ::testing::TestWithParam<uint64_t> {};

TEST_P(SizeClassesTest, ClassesAreAlignedAscendingAndBounded) {
  const uint64_t page = GetParam();
  SizeClasses classes(page);
  ASSERT_GT(classes.count(), 0);
  EXPECT_EQ(classes.size(0), SizeClasses::kMinClassBytes);
  EXPECT_EQ(classes.max_size(), page / 2);
  for (int c = 0; c < classes.count(); ++c) {
    EXPECT_EQ(classes.size(c) % 64, 0u);
    EXPECT_GE(classes.objects_per_page(c), 2u);
    // Widened classes leave less than one 64-byte step per object unused in a page.
    EXPECT_LT(page - uint64_t{classes.objects_per_page(c)} * classes.size(c),
              64ull * classes.objects_per_page(c));
    if (c > 0) {
      EXPECT_GT(classes.size(c), classes.size(c - 1));
    }
  }
}

TEST_P(SizeClassesTest, TailPlanCoversSizeWithBoundedSlack) {
  const uint64_t page = GetParam();
  SizeClasses classes(page);
  const uint64_t step = page > 65536 ? 61 : 1;  // every size for small pages
  for (uint64_t n = 1; n < page; n += step) {
    int plan[SizeClasses::kMaxTailPieces];
    const int pieces = classes.PlanTail(n, plan);
    ASSERT_GE(pieces, 1);
    ASSERT_LE(pieces, SizeClasses::kMaxTailPieces);
    uint64_t total = 0;
    for (int i = 0; i < pieces; ++i) {
      ASSERT_GE(plan[i], 0);
      total += classes.size(plan[i]);
    }
    ASSERT_GE(total, n);
    if (pieces == 2) {
      ASSERT_LT(classes.size(plan[0]), n);  // the first piece is filled
    }
    // About 4 classes per doubling: slack stays under a quarter of the size (1 KiB floor).
    ASSERT_LE(total, n + n / 4 + SizeClasses::kMinClassBytes) << "n=" << n;
  }
}

TEST_P(SizeClassesTest, ClassForAndLargestBelow) {
  SizeClasses classes(GetParam());
  EXPECT_EQ(classes.ClassFor(1), 0);
  EXPECT_EQ(classes.ClassFor(1024), 0);
  EXPECT_EQ(classes.ClassFor(1025), 1);
  EXPECT_EQ(classes.ClassFor(classes.max_size()), classes.count() - 1);
  EXPECT_EQ(classes.ClassFor(classes.max_size() + 1), -1);
  EXPECT_EQ(classes.LargestBelow(1024), -1);
  EXPECT_EQ(classes.LargestBelow(1025), 0);
}

INSTANTIATE_TEST_SUITE_P(Pages, SizeClassesTest, ::testing::Values(4096, 65536, 1 << 20, 2 << 20));

}  // namespace
}  // namespace kvstash::storage
