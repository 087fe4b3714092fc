#include "ops.h"

#include <string>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "buffers.h"
#include "errors.h"

namespace nb = nanobind;

namespace kvstash::python {
namespace {

nb::object TypesAttr(const char* name) { return nb::module_::import_("kvstash._types").attr(name); }

// kvstash.Tier members in order: one enum call per member, not one per key.
nb::list TierList(const std::vector<ChunkTier>& tiers) {
  constexpr int kLast = static_cast<int>(ChunkTier::kNvme);
  nb::object tier = TypesAttr("Tier");
  nb::object members[kLast + 1];
  for (int i = 0; i <= kLast; ++i) members[i] = tier(i);
  nb::list out = nb::steal<nb::list>(PyList_New(static_cast<Py_ssize_t>(tiers.size())));
  for (size_t k = 0; k < tiers.size(); ++k) {
    const int i = static_cast<int>(tiers[k]);
    nb::object member = i <= kLast ? members[i] : tier(i);
    PyList_SET_ITEM(out.ptr(), static_cast<Py_ssize_t>(k), member.release().ptr());
  }
  return out;
}

void CheckSameLength(size_t keys, size_t buffers) {
  if (keys != buffers) {
    ThrowInvalid(absl::StrCat(keys, " keys but ", buffers, " buffers; pass one buffer per key"));
  }
}

absl::Status ItemError(size_t i, const Key128& key, const absl::Status& status) {
  return absl::Status(status.code(),
                      absl::StrCat("keys[", i, "] (", KeyToHex(key), "): ", status.message()));
}

class PutOp final : public Op {
 public:
  PutOp(NamespaceHandle ns, std::vector<Key128> keys, std::vector<Buffer> buffers, uint32_t tokens,
        uint32_t format, const PutHints& hints, bool chain)
      : ns_(ns), buffers_(std::move(buffers)) {
    items_.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      if (buffers_[i].size() == 0) ThrowInvalid(absl::StrCat("buffers[", i, "] is empty"));
      items_[i] = PutItem{keys[i], buffers_[i].data(), buffers_[i].size(), tokens, format, hints};
      if (chain && i > 0) {
        items_[i].hints.has_parent = true;
        items_[i].hints.parent = keys[i - 1];
      }
    }
  }
  void Run(Client& client) override { status_ = client.Put(ns_, absl::MakeSpan(items_)); }
  nb::object Result() override {
    ThrowIfError(status_);
    nb::list out;
    for (size_t i = 0; i < items_.size(); ++i) {
      const absl::Status& s = items_[i].status;
      if (!s.ok() && !absl::IsResourceExhausted(s))
        throw StatusError(ItemError(i, items_[i].key, s));
      out.append(nb::bool_(s.ok()));
    }
    return out;
  }

 private:
  NamespaceHandle ns_;
  std::vector<Buffer> buffers_;
  std::vector<PutItem> items_;
  absl::Status status_;
};

class GetOp final : public Op {
 public:
  GetOp(NamespaceHandle ns, std::vector<Key128> keys, std::vector<Buffer> buffers,
        uint64_t lease_id)
      : ns_(ns), lease_id_(lease_id), buffers_(std::move(buffers)) {
    items_.resize(keys.size());
    for (size_t i = 0; i < keys.size(); ++i) {
      items_[i].key = keys[i];
      items_[i].data = buffers_[i].data();
      items_[i].capacity = buffers_[i].size();
    }
  }
  void Run(Client& client) override {
    status_ = client.Get(ns_, absl::MakeSpan(items_), lease_id_);
  }
  nb::object Result() override {
    ThrowIfError(status_);
    nb::list out;
    for (size_t i = 0; i < items_.size(); ++i) {
      const GetItem& it = items_[i];
      if (it.status.ok()) {
        out.append(nb::int_(it.size));
      } else if (absl::IsNotFound(it.status)) {
        out.append(nb::none());
      } else if (absl::IsResourceExhausted(it.status)) {
        ThrowInvalid(absl::StrCat("buffers[", i, "] holds ", it.capacity,
                                  " bytes; the chunk of keys[", i, "] is ", it.size, " bytes"));
      } else {
        throw StatusError(ItemError(i, it.key, it.status));
      }
    }
    return out;
  }

 private:
  NamespaceHandle ns_;
  uint64_t lease_id_;
  std::vector<Buffer> buffers_;
  std::vector<GetItem> items_;
  absl::Status status_;
};

class LookupOp final : public Op {
 public:
  LookupOp(NamespaceHandle ns, std::vector<Key128> keys, uint32_t lease_ms, uint64_t session_id)
      : ns_(ns), keys_(std::move(keys)), lease_ms_(lease_ms), session_id_(session_id) {}
  void Run(Client& client) override { result_ = client.Lookup(ns_, keys_, lease_ms_, session_id_); }
  nb::object Result() override {
    ThrowIfError(result_.status());
    return TypesAttr("LookupResult")(result_->hit_count, TierList(result_->tiers),
                                     result_->lease_id);
  }

 private:
  NamespaceHandle ns_;
  std::vector<Key128> keys_;
  uint32_t lease_ms_;
  uint64_t session_id_;
  absl::StatusOr<LookupResult> result_;
};

class ExistsOp final : public Op {
 public:
  ExistsOp(NamespaceHandle ns, std::vector<Key128> keys) : ns_(ns), keys_(std::move(keys)) {}
  void Run(Client& client) override { result_ = client.Exists(ns_, keys_); }
  nb::object Result() override {
    ThrowIfError(result_.status());
    return TierList(*result_);
  }

 private:
  NamespaceHandle ns_;
  std::vector<Key128> keys_;
  absl::StatusOr<std::vector<ChunkTier>> result_;
};

class DeleteOp final : public Op {
 public:
  DeleteOp(NamespaceHandle ns, std::vector<Key128> keys) : ns_(ns), keys_(std::move(keys)) {}
  void Run(Client& client) override { result_ = client.Delete(ns_, keys_); }
  nb::object Result() override {
    ThrowIfError(result_.status());
    return nb::int_(*result_);
  }

 private:
  NamespaceHandle ns_;
  std::vector<Key128> keys_;
  absl::StatusOr<uint32_t> result_;
};

}  // namespace

OpPtr MakePutOp(NamespaceHandle ns, nb::handle keys, nb::handle buffers, uint32_t tokens,
                uint32_t format, const PutHints& hints, bool chain) {
  std::vector<Key128> k = ParseKeys(keys);
  std::vector<Buffer> b = BorrowAll(buffers, /*writable=*/false);
  CheckSameLength(k.size(), b.size());
  return std::make_shared<PutOp>(ns, std::move(k), std::move(b), tokens, format, hints, chain);
}

OpPtr MakeGetOp(NamespaceHandle ns, nb::handle keys, nb::handle buffers, uint64_t lease_id) {
  std::vector<Key128> k = ParseKeys(keys);
  std::vector<Buffer> b = BorrowAll(buffers, /*writable=*/true);
  CheckSameLength(k.size(), b.size());
  return std::make_shared<GetOp>(ns, std::move(k), std::move(b), lease_id);
}

OpPtr MakeLookupOp(NamespaceHandle ns, nb::handle keys, uint32_t lease_ms, uint64_t session_id) {
  return std::make_shared<LookupOp>(ns, ParseKeys(keys), lease_ms, session_id);
}

OpPtr MakeExistsOp(NamespaceHandle ns, nb::handle keys) {
  return std::make_shared<ExistsOp>(ns, ParseKeys(keys));
}

OpPtr MakeDeleteOp(NamespaceHandle ns, nb::handle keys) {
  return std::make_shared<DeleteOp>(ns, ParseKeys(keys));
}

}  // namespace kvstash::python
