#include "client/paged_handle.h"

#include <string>
#include <utility>

namespace kvstash::internal {

void OpState::CopiesEnqueued(Fence all, std::vector<Fence> layers) {
  absl::MutexLock lock(&mu_);
  all_ = std::move(all);
  layers_ = std::move(layers);
  enqueued_ = true;
}

void OpState::Done(absl::StatusOr<PagedResult> result) {
  absl::MutexLock lock(&mu_);
  result_ = std::move(result);
  done_ = true;
}

bool OpState::AwaitEnqueued(Fence* all, std::vector<Fence>* layers) {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(
      +[](OpState* s) ABSL_EXCLUSIVE_LOCKS_REQUIRED(s->mu_) { return s->enqueued_ || s->done_; },
      this));
  *all = all_;
  *layers = layers_;
  return enqueued_;
}

absl::StatusOr<PagedResult> OpState::AwaitResult() {
  absl::MutexLock lock(&mu_);
  mu_.Await(absl::Condition(&done_));
  return result_;
}

namespace {

// Thread-safety: thread-safe (all state is in OpState).
class PagedHandleImpl final : public PagedHandle {
 public:
  PagedHandleImpl(std::shared_ptr<OpState> state, StreamWaitFn stream_wait)
      : state_(std::move(state)), stream_wait_(std::move(stream_wait)) {}

  absl::StatusOr<PagedResult> Wait() override { return state_->AwaitResult(); }

  absl::Status StreamWait(void* stream) override {
    Fence all;
    std::vector<Fence> layers;
    if (!state_->AwaitEnqueued(&all, &layers) || all == nullptr) {
      return state_->AwaitResult().status();
    }
    return stream_wait_(all, stream);
  }

  absl::Status StreamWaitLayer(int32_t layer, void* stream) override {
    Fence all;
    std::vector<Fence> layers;
    if (!state_->AwaitEnqueued(&all, &layers)) return state_->AwaitResult().status();
    if (layer < 0 || static_cast<size_t>(layer) >= layers.size()) {
      return absl::InvalidArgumentError("layer " + std::to_string(layer) + " of a transfer with " +
                                        std::to_string(layers.size()) +
                                        " layer fences (only "
                                        "GetPagedLayerwise has them)");
    }
    if (layers[layer] == nullptr) return state_->AwaitResult().status();
    return stream_wait_(layers[layer], stream);
  }

 private:
  const std::shared_ptr<OpState> state_;
  const StreamWaitFn stream_wait_;
};

}  // namespace

PagedHandlePtr MakePagedHandle(std::shared_ptr<OpState> state, StreamWaitFn stream_wait) {
  return std::make_unique<PagedHandleImpl>(std::move(state), std::move(stream_wait));
}

}  // namespace kvstash::internal
