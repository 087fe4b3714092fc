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
// by failing the whole stream; refusing it here names the item) or with null data.
absl::Status CheckPutItems(absl::Span<const PutItem> items);
// INVALID_ARGUMENT naming the first item with null data but a capacity.
absl::Status CheckGetItems(absl::Span<const GetItem> items);

}  // namespace kvstash::client_internal
