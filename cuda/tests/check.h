// Test macros for cuda/ tests: GoogleTest when KVSTASH_USE_GTEST is defined, otherwise the
// tiny harness below with the same spelling (TEST, EXPECT_*/ASSERT_* with `<<` messages),
// so the standalone cuda/ project builds its tests on hosts without GoogleTest.
//
// Thread-safety (minitest): tests run one at a time on the main thread; the macros must
// only be used on that thread.
#pragma once

#if defined(KVSTASH_USE_GTEST)
#include "gtest/gtest.h"
#else

#include <sstream>
#include <string>

namespace kvstash::minitest {

using TestFn = void (*)();

// Adds a test to the registry at static-initialisation time.
struct Registrar {
  Registrar(const char* suite, const char* name, TestFn fn);
};

// Streams the user's `<< ...` message of a failed check.
class Message {
 public:
  template <typename T>
  Message& operator<<(const T& v) {
    os_ << v;
    return *this;
  }
  std::string str() const { return os_.str(); }

 private:
  std::ostringstream os_;
};

// Records a failure of the current test (`=` so that `<<` binds first).
struct Failure {
  const char* file;
  int line;
  const char* check;
  void operator=(const Message& m) const;
};

// Runs every registered test whose "Suite.Name" contains the --filter=TEXT argument (all
// when absent). Returns 0 when all passed, 1 otherwise.
int RunAll(int argc, char** argv);
// Whether the current test has failed so far.
bool CurrentTestFailed();

}  // namespace kvstash::minitest

#define TEST(suite, name)                                                                         \
  static void suite##_##name##_Test();                                                            \
  static const ::kvstash::minitest::Registrar suite##_##name##_registrar(#suite, #name,           \
                                                                         &suite##_##name##_Test); \
  static void suite##_##name##_Test()

#define KVSTASH_MT_CHECK_(cond, text, on_fail)                         \
  switch (0)                                                           \
  case 0:                                                              \
  default:                                                             \
    if (cond) {                                                        \
    } else                                                             \
      on_fail ::kvstash::minitest::Failure{__FILE__, __LINE__, text} = \
          ::kvstash::minitest::Message()

#define EXPECT_TRUE(c) KVSTASH_MT_CHECK_(c, "EXPECT_TRUE(" #c ")", )
#define EXPECT_FALSE(c) KVSTASH_MT_CHECK_(!(c), "EXPECT_FALSE(" #c ")", )
#define EXPECT_EQ(a, b) KVSTASH_MT_CHECK_((a) == (b), "EXPECT_EQ(" #a ", " #b ")", )
#define EXPECT_NE(a, b) KVSTASH_MT_CHECK_((a) != (b), "EXPECT_NE(" #a ", " #b ")", )
#define ASSERT_TRUE(c) KVSTASH_MT_CHECK_(c, "ASSERT_TRUE(" #c ")", return )
#define ASSERT_FALSE(c) KVSTASH_MT_CHECK_(!(c), "ASSERT_FALSE(" #c ")", return )
#define ASSERT_EQ(a, b) KVSTASH_MT_CHECK_((a) == (b), "ASSERT_EQ(" #a ", " #b ")", return )

#endif  // KVSTASH_USE_GTEST
