// kvstashd: the kvstash KV-cache daemon. See server/daemon.h and docs/protocol.md.
#include "server/daemon.h"

int main(int argc, char** argv) { return kvstash::server::RunDaemon(argc, argv); }
