#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "tests/check.h"

namespace kvstash::minitest {
namespace {

struct Test {
  std::string name;
  TestFn fn;
};

// The registry and the current test's state; touched only from the main thread.
std::vector<Test>& Registry() {
  static std::vector<Test> tests;
  return tests;
}
bool& Failed() {
  static bool failed = false;
  return failed;
}

}  // namespace

Registrar::Registrar(const char* suite, const char* name, TestFn fn) {
  Registry().push_back({std::string(suite) + "." + name, fn});
}

void Failure::operator=(const Message& m) const {
  Failed() = true;
  std::fprintf(stderr, "%s:%d: Failure: %s %s\n", file, line, check, m.str().c_str());
}

bool CurrentTestFailed() { return Failed(); }

int RunAll(int argc, char** argv) {
  std::string filter;
  for (int i = 1; i < argc; ++i) {
    if (std::strncmp(argv[i], "--filter=", 9) == 0) filter = argv[i] + 9;
  }
  int run = 0, failed = 0;
  for (const Test& t : Registry()) {
    if (!filter.empty() && t.name.find(filter) == std::string::npos) continue;
    std::printf("[ RUN      ] %s\n", t.name.c_str());
    std::fflush(stdout);
    Failed() = false;
    t.fn();
    ++run;
    failed += Failed() ? 1 : 0;
    std::printf("[ %s ] %s\n", Failed() ? " FAILED " : "      OK", t.name.c_str());
  }
  std::printf("%d tests, %d failed\n", run, failed);
  return failed == 0 && run > 0 ? 0 : 1;
}

}  // namespace kvstash::minitest
