// The rules a call's items must meet before anything is sent, shared by the single-daemon
// client (ClientImpl) and the cluster client, so both refuse the same items with the same
// messages.
//
// Thread-safety: functions of their arguments.
#pragma once

#include "absl/status/status.h"
#include "absl/types/span.h"
#include "kvstash/client.h"

namespace kvstash::client_internal {

// INVALID_ARGUMENT naming the first item with size 0 (the daemon refuses an empty chunk
// by failing the whole stream; refusing it here names the item), with null data, or whose
// bytes are not all mapped in this process (so a bad buffer fails the call before any byte
// moves, instead of faulting a copy halfway through the batch).
absl::Status CheckPutItems(absl::Span<const PutItem> items);
// INVALID_ARGUMENT naming the first item with null data but a capacity, or whose
// [data, data + capacity) is not all mapped in this process.
absl::Status CheckGetItems(absl::Span<const GetItem> items);

}  // namespace kvstash::client_internal
