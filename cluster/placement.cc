#include "cluster/placement.h"

#include <algorithm>
#include <utility>

#include "common/xxh3_dispatch.h"

namespace kvstash::cluster {
Placement::Placement(std::vector<Member> members) : members_(SortedById(std::move(members))) {
  id_hashes_.reserve(members_.size());
  for (const Member& m : members_) id_hashes_.push_back(HashId(m.id));
}

int Placement::IndexOf(absl::string_view id) const {
  auto it = std::lower_bound(members_.begin(), members_.end(), id,
                             [](const Member& m, absl::string_view v) { return m.id < v; });
  if (it == members_.end() || it->id != id) return -1;
  return static_cast<int>(it - members_.begin());
}

OwnerList Placement::Owners(const Key128& key, size_t n) const {
  n = std::min(n, members_.size());
  // Scores of every member, then the n best by partial selection: N is small (tens).
  absl::InlinedVector<std::pair<uint64_t, uint32_t>, 16> scored;
  scored.reserve(members_.size());
  for (size_t i = 0; i < members_.size(); ++i) {
    scored.emplace_back(Score(key, id_hashes_[i]), static_cast<uint32_t>(i));
  }
  // Ties (astronomically rare) go to the lower index, i.e. the smaller id.
  auto better = [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  };
  std::partial_sort(scored.begin(), scored.begin() + n, scored.end(), better);
  OwnerList out;
  for (size_t i = 0; i < n; ++i) out.push_back(scored[i].second);
  return out;
}

uint32_t Placement::Owner(const Key128& key) const {
  uint32_t best = 0;
  uint64_t best_score = Score(key, id_hashes_[0]);
  for (size_t i = 1; i < members_.size(); ++i) {
    const uint64_t s = Score(key, id_hashes_[i]);
    if (s > best_score) {
      best_score = s;
      best = static_cast<uint32_t>(i);
    }
  }
  return best;
}

uint64_t Placement::Score(const Key128& key, uint64_t id_hash) {
  // XXH3 of the key seeded with the member's id hash: every bit of both reaches every bit
  // of the score, so keys that share bytes (chained prefix keys) still spread evenly.
  return XXH3_64bits_withSeed(key.data(), key.size(), id_hash);
}

uint64_t Placement::HashId(absl::string_view id) { return XXH3_64bits(id.data(), id.size()); }

}  // namespace kvstash::cluster
