#include "bench/workload/placement_study.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_cat.h"
#include "cluster/placement.h"

namespace kvstash::bench::workload {
namespace {

// One request of the replay: when it arrives and the keys of its prompt and output.
struct Request {
  double arrival_s = 0;
  std::vector<Key128> keys;  // full chunks of prompt + output
  size_t prompt_chunks = 0;  // the first prompt_chunks of keys are the prompt's
};

std::vector<Request> Requests(const Trace& trace, const KeyChain& chain,
                              const PlacementStudyOptions& o) {
  std::vector<Request> out;
  for (const Session& s : trace.sessions) {
    double t = s.start_s;
    for (const Turn& turn : s.turns) {
      t += turn.delay_s;
      std::vector<int32_t> tokens = turn.prompt;
      tokens.insert(tokens.end(), turn.output.begin(), turn.output.end());
      out.push_back({t, chain.PrefixKeys(tokens), turn.prompt.size() / chain.chunk_tokens()});
      t += static_cast<double>(turn.output.size()) / o.decode_tokens_per_s;
    }
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Request& a, const Request& b) { return a.arrival_s < b.arrival_s; });
  return out;
}

double MaxOverMean(const std::vector<uint64_t>& v) {
  uint64_t total = 0, max = 0;
  for (uint64_t x : v) total += x, max = std::max(max, x);
  return total == 0 ? 0 : static_cast<double>(max) * v.size() / static_cast<double>(total);
}

double P99(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const size_t i = static_cast<size_t>(std::ceil(0.99 * v.size())) - 1;
  return v[std::min(i, v.size() - 1)];
}

// The replay of one (member count, unit): per-member counters and per-lookup samples.
class Replay {
 public:
  Replay(int members, const PlacementUnit& unit, const PlacementStudyOptions& o,
         const absl::flat_hash_set<Key128>* hot)
      : placement_(Members(members)),
        unit_(unit),
        o_(o),
        hot_(hot),
        requests_(members),
        chunks_(members),
        kept_(members) {}

  void Run(const Request& r) {
    // owners[i]: the member that serves chunk i for this request; a replicated chunk's
    // copies take turns.
    std::vector<cluster::OwnerList> copies(r.keys.size());
    std::vector<uint32_t> owners(r.keys.size());
    std::vector<bool> replicated(r.keys.size());
    for (size_t i = 0; i < r.keys.size(); ++i) {
      replicated[i] = unit_.hot_replicas > 1 && hot_->contains(r.keys[i]);
      copies[i] = placement_.Owners(r.keys[Anchor(i)], replicated[i] ? unit_.hot_replicas : 1);
      owners[i] = copies[i][(result_.requests + i) % copies[i].size()];
    }
    ++result_.requests;
    const size_t hits = Lookup(r, owners, replicated);
    std::vector<uint64_t>& window = windows_[static_cast<int64_t>(r.arrival_s / o_.window_s)];
    window.resize(requests_.size());
    for (size_t i = 0; i < r.keys.size(); ++i) {
      if (i >= hits && !stored_.insert(r.keys[i]).second) continue;  // stored after a gap
      ++per_key_[r.keys[i]];
      ++result_.chunk_requests;
      const cluster::OwnerList to = i < hits ? cluster::OwnerList{owners[i]} : copies[i];
      for (uint32_t m : to) {
        if (i >= hits) ++chunks_[m];
        ++requests_[m];
        ++window[m];
      }
    }
  }

  PlacementResult Finish();

 private:
  double TopPercentShare() const {
    std::vector<uint64_t> counts;
    for (const auto& [key, n] : per_key_) counts.push_back(n);
    std::sort(counts.begin(), counts.end(), std::greater<>());
    const size_t top = (counts.size() + 99) / 100;
    uint64_t hot = 0;
    for (size_t i = 0; i < top; ++i) hot += counts[i];
    return result_.chunk_requests == 0 ? 0 : static_cast<double>(hot) / result_.chunk_requests;
  }

  static std::vector<cluster::Member> Members(int n) {
    std::vector<cluster::Member> members;
    for (const std::string& id : StudyMemberIds(n)) members.push_back({.id = id});
    return members;
  }

  size_t Anchor(size_t i) const {
    return unit_.group_chunks == 0 ? 0 : i / unit_.group_chunks * unit_.group_chunks;
  }

  // Samples the lookup of the prompt's chunks; returns the leading hits.
  size_t Lookup(const Request& r, const std::vector<uint32_t>& owners,
                const std::vector<bool>& replicated) {
    const size_t n = r.prompt_chunks;
    if (n == 0) return 0;
    ++result_.lookups;
    result_.prompt_chunks += n;
    std::vector<uint32_t> per_member(requests_.size());
    for (size_t i = 0; i < n; ++i) ++per_member[owners[i]];
    const auto touched =
        std::count_if(per_member.begin(), per_member.end(), [](uint32_t c) { return c > 0; });
    lookup_members_.push_back(static_cast<double>(touched));
    max_share_sum_ +=
        static_cast<double>(*std::max_element(per_member.begin(), per_member.end())) / n;
    size_t hits = 0;
    while (hits < n && stored_.contains(r.keys[hits])) ++hits;
    if (hits == 0) return 0;
    result_.hit_chunks += hits;
    std::vector<bool> fetch(requests_.size());
    for (size_t i = 0; i < hits; ++i) fetch[owners[i]] = true;
    fetch_members_.push_back(static_cast<double>(std::count(fetch.begin(), fetch.end(), true)));
    for (size_t lost = 0; lost < kept_.size(); ++lost) {
      size_t kept = 0;
      while (kept < hits && (owners[kept] != lost || replicated[kept])) ++kept;
      kept_[lost] += kept;
    }
    return hits;
  }

  const cluster::Placement placement_;
  const PlacementUnit unit_;
  const PlacementStudyOptions o_;
  const absl::flat_hash_set<Key128>* hot_;
  PlacementResult result_;
  absl::flat_hash_set<Key128> stored_;
  std::vector<uint64_t> requests_;                    // chunk requests per member
  std::vector<uint64_t> chunks_;                      // chunks stored per member
  std::vector<uint64_t> kept_;                        // hit chunks kept with member i lost
  std::map<int64_t, std::vector<uint64_t>> windows_;  // chunk requests per member
  absl::flat_hash_map<Key128, uint64_t> per_key_;     // chunk requests per chunk
  std::vector<double> lookup_members_;
  std::vector<double> fetch_members_;
  double max_share_sum_ = 0;
};

PlacementResult Replay::Finish() {
  PlacementResult r = result_;
  r.unit = unit_.Name();
  r.members = static_cast<int>(requests_.size());
  for (uint64_t c : chunks_) r.chunks_stored += c;
  r.requests_max_over_mean = MaxOverMean(requests_);
  r.bytes_max_over_mean = MaxOverMean(chunks_);  // every chunk has chunk_bytes
  const uint64_t hottest = *std::max_element(requests_.begin(), requests_.end());
  r.hottest_share = r.chunk_requests == 0 ? 0 : static_cast<double>(hottest) / r.chunk_requests;
  uint64_t busiest = 0;
  for (const auto& [w, counts] : windows_) {
    uint64_t total = 0;
    for (uint64_t c : counts) total += c;
    if (total > busiest) busiest = total, r.busiest_window_max_over_mean = MaxOverMean(counts);
  }
  double sum = 0;
  for (double m : lookup_members_) sum += m;
  r.lookup_members_mean = lookup_members_.empty() ? 0 : sum / lookup_members_.size();
  r.lookup_members_p99 = P99(lookup_members_);
  r.lookup_max_share_mean = r.lookups == 0 ? 0 : max_share_sum_ / r.lookups;
  sum = 0;
  for (double m : fetch_members_) sum += m;
  r.fetch_members_mean = fetch_members_.empty() ? 0 : sum / fetch_members_.size();
  r.top_percent_share = TopPercentShare();
  uint64_t kept = 0;
  for (uint64_t k : kept_) kept += k;
  r.hits_kept_after_loss =
      r.hit_chunks == 0 ? 1.0 : static_cast<double>(kept) / kept_.size() / r.hit_chunks;
  return r;
}

// The hottest 1% of chunks by chunk requests (gets of hits, puts of the rest), which do
// not depend on placement: the store is unbounded and shared.
absl::flat_hash_set<Key128> HotChunks(const std::vector<Request>& requests) {
  absl::flat_hash_map<Key128, uint64_t> count;
  for (const Request& r : requests) {
    size_t hits = 0;
    while (hits < r.prompt_chunks && count.contains(r.keys[hits])) ++hits;
    for (size_t i = 0; i < r.keys.size(); ++i) {
      auto [it, added] = count.try_emplace(r.keys[i], 0);
      if (i < hits || added) ++it->second;
    }
  }
  std::vector<std::pair<uint64_t, Key128>> by_count;
  for (const auto& [key, n] : count) by_count.push_back({n, key});
  const size_t top = (by_count.size() + 99) / 100;
  std::partial_sort(by_count.begin(), by_count.begin() + top, by_count.end(),
                    [](const auto& a, const auto& b) {  // ties by key: the same set every run
                      return a.first != b.first ? a.first > b.first : a.second < b.second;
                    });
  absl::flat_hash_set<Key128> hot;
  for (size_t i = 0; i < top; ++i) hot.insert(by_count[i].second);
  return hot;
}

}  // namespace

std::string PlacementUnit::Name() const {
  std::string name = group_chunks == 0   ? "chain"
                     : group_chunks == 1 ? "chunk"
                                         : absl::StrCat("segment", group_chunks);
  if (hot_replicas > 1) absl::StrAppend(&name, "+hot", hot_replicas);
  return name;
}

std::vector<std::string> StudyMemberIds(int members) {
  std::vector<std::string> ids;
  for (int i = 0; i < members; ++i) ids.push_back(absl::StrCat("kvstash-", i));
  return ids;
}

std::vector<PlacementResult> RunPlacementStudy(const Trace& trace, const KeyChain& chain,
                                               const std::vector<int>& member_counts,
                                               const std::vector<PlacementUnit>& units,
                                               const PlacementStudyOptions& options) {
  const std::vector<Request> requests = Requests(trace, chain, options);
  const absl::flat_hash_set<Key128> hot = HotChunks(requests);
  std::vector<PlacementResult> out;
  for (int n : member_counts) {
    for (const PlacementUnit& unit : units) {
      Replay replay(n, unit, options, &hot);
      for (const Request& r : requests) replay.Run(r);
      out.push_back(replay.Finish());
    }
  }
  return out;
}

}  // namespace kvstash::bench::workload
