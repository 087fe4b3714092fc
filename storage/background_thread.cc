#include "storage/background_thread.h"

#include <pthread.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

namespace kvstash::storage {

void SetUpBackgroundThread(const char* name, bool low_priority) {
  pthread_setname_np(pthread_self(), name);
  // On Linux a nice value belongs to a thread: PRIO_PROCESS with a thread id sets that
  // thread's. Best effort: a thread that cannot be lowered runs at the normal priority.
  if (low_priority) setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
}

}  // namespace kvstash::storage
