#include "tests/check.h"

int main(int argc, char** argv) { return kvstash::minitest::RunAll(argc, argv); }
