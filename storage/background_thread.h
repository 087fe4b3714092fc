// Set-up for the storage layer's background threads.
//
// Thread-safety: SetUpBackgroundThread acts on the calling thread only.
#pragma once

namespace kvstash::storage {

// Names the calling thread (`name`, at most 15 characters, as ps and top show it) and, with
// `low_priority`, lowers it to nice 19: on a host whose cores are busy, the scheduler then
// runs request threads first and gives this one the time they leave.
void SetUpBackgroundThread(const char* name, bool low_priority);

}  // namespace kvstash::storage
