#include "client/item_checks.h"

#include "absl/strings/str_cat.h"

namespace kvstash::client_internal {

absl::Status CheckPutItems(absl::Span<const PutItem> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].size == 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("PutItem ", i, ": size is 0; a chunk holds at least one byte"));
    }
    if (items[i].data == nullptr) {
      return absl::InvalidArgumentError(
          absl::StrCat("PutItem ", i, ": data is null but size is ", items[i].size));
    }
  }
  return absl::OkStatus();
}

absl::Status CheckGetItems(absl::Span<const GetItem> items) {
  for (size_t i = 0; i < items.size(); ++i) {
    if (items[i].data == nullptr && items[i].capacity > 0) {
      return absl::InvalidArgumentError(
          absl::StrCat("GetItem ", i, ": data is null but capacity is ", items[i].capacity));
    }
  }
  return absl::OkStatus();
}

}  // namespace kvstash::client_internal
