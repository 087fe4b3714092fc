// Routing helpers of the cluster client's data calls: keys grouped per member, each key's
// candidate members in order, rounds that move each unresolved key on to its next
// candidate, one member call with its breaker bookkeeping, and the rule that a refusal
// fails a cluster call only when every member asked refused.
//
// Thread-safety: functions of their arguments; Refusals is thread-safe; Groups belongs to
// one call.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/container/inlined_vector.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "absl/types/span.h"
#include "client/cluster_client.h"
#include "client/cluster_member.h"
#include "client/fan_out.h"

namespace kvstash::client_internal {

using Candidates = absl::InlinedVector<MemberConn*, 4>;

// Keys (or items) of one call grouped by the member they go to, in first-seen order.
struct Groups {
  std::vector<MemberConn*> conns;
  std::vector<std::vector<size_t>> indices;

  void Add(MemberConn* conn, size_t index) {
    auto it = std::find(conns.begin(), conns.end(), conn);
    if (it == conns.end()) {
      conns.push_back(conn);
      indices.emplace_back();
      it = conns.end() - 1;
    }
    indices[it - conns.begin()].push_back(index);
  }
  size_t size() const { return conns.size(); }
};

inline void AddUnique(MemberConn* conn, Candidates* cands) {
  if (conn != nullptr && std::find(cands->begin(), cands->end(), conn) == cands->end()) {
    cands->push_back(conn);
  }
}

// The owners of `key`, then its previous owner while a hand-over lasts.
inline Candidates CandidatesOf(const ClusterView& view, const ClusterView* previous,
                               const Key128& key, size_t replicas) {
  Candidates out;
  for (MemberConn* c : view.Owners(key, replicas)) AddUnique(c, &out);
  if (previous != nullptr && !previous->current.empty()) {
    AddUnique(previous->Owners(key, 1)[0], &out);
  }
  return out;
}

// Each round sends every unresolved index to its next candidate whose breaker is not
// open, one call per member, members in parallel, until each is resolved, has no
// candidate left, or `deadline` has passed. call(conn, indices, resolved) makes one
// member's call and sets resolved[k] for each index that needs no other candidate.
template <typename Call>
void RunRounds(FanOutPool& pool, const std::vector<Candidates>& cands, absl::Time deadline,
               Call call) {
  std::vector<size_t> cursor(cands.size(), 0);
  std::vector<uint8_t> done(cands.size(), 0);
  while (absl::Now() < deadline) {
    Groups groups;
    for (size_t i = 0; i < cands.size(); ++i) {
      if (done[i]) continue;
      while (cursor[i] < cands[i].size() && cands[i][cursor[i]]->Skip()) ++cursor[i];
      if (cursor[i] >= cands[i].size()) {
        done[i] = 1;
        continue;
      }
      groups.Add(cands[i][cursor[i]], i);
    }
    if (groups.size() == 0) return;
    std::vector<std::vector<uint8_t>> resolved(groups.size());
    pool.Run(groups.size(), [&](size_t g) {
      resolved[g].assign(groups.indices[g].size(), 0);
      call(groups.conns[g], absl::MakeConstSpan(groups.indices[g]), absl::MakeSpan(resolved[g]));
    });
    for (size_t g = 0; g < groups.size(); ++g) {
      for (size_t k = 0; k < groups.indices[g].size(); ++k) {
        const size_t i = groups.indices[g][k];
        if (resolved[g][k]) {
          done[i] = 1;
        } else {
          ++cursor[i];
        }
      }
    }
  }
}

// Makes one member call with Begin/Done around it; the call's status.
template <typename Fn>
absl::Status CallMember(MemberConn* conn, const Key128& ns, absl::Time deadline, Fn fn) {
  absl::StatusOr<Client*> client = conn->Begin(&ns, deadline);
  if (!client.ok()) return client.status();
  absl::Status s = fn(**client);
  conn->Done(s);
  return s;
}

// The member calls of one cluster call. A refusal (an answer that is an error, such as
// RESOURCE_EXHAUSTED from a member's call limiter or PERMISSION_DENIED from a member with
// other tokens) fails the cluster call only when every member asked refused; otherwise
// the refusing member's keys are misses like those of a member that failed.
class Refusals {
 public:
  // Every member call's status.
  void Note(const absl::Status& s) {
    absl::MutexLock lock(&mu_);
    ++asked_;
    if (s.ok() || IsMemberFailure(s)) return;
    ++refused_;
    if (first_.ok()) first_ = s;
  }
  // The first refusal when every member asked refused, else OK.
  absl::Status status() {
    absl::MutexLock lock(&mu_);
    return refused_ > 0 && refused_ == asked_ ? first_ : absl::OkStatus();
  }

 private:
  absl::Mutex mu_;
  absl::Status first_ ABSL_GUARDED_BY(mu_);
  size_t asked_ ABSL_GUARDED_BY(mu_) = 0;
  size_t refused_ ABSL_GUARDED_BY(mu_) = 0;
};

}  // namespace kvstash::client_internal
