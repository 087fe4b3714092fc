#include "bench/workload/simulator.h"

#include <algorithm>
#include <cmath>
#include <queue>
#include <utility>

#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "bench/workload/engine_cache.h"

namespace kvstash::bench::workload {
namespace {

enum class EventKind { kArrive, kGpuReady, kPrefillDone, kDecodeDone };

struct Event {
  double t = 0;
  uint64_t seq = 0;  // ties break in scheduling order, so runs are deterministic
  EventKind kind = EventKind::kArrive;
  size_t session = 0;
  size_t turn = 0;
  size_t request = 0;  // index into requests_ (not for kArrive)
  bool operator>(const Event& o) const { return t != o.t ? t > o.t : seq > o.seq; }
};

struct Request {
  size_t session = 0, turn = 0;
  double arrival = 0;
  std::vector<Key128> keys;  // the prompt's full chunks
  uint64_t hit_tokens = 0;   // engine hits plus fetched chunks
  size_t put_from = 0;       // first chunk the store does not hold
};

class Simulation {
 public:
  Simulation(const Trace& trace, const KeyChain& chain, const SimOptions& o, RemoteStore* store)
      : trace_(trace),
        chain_(chain),
        o_(o),
        store_(store),
        engine_(o.engine_capacity_chunks),
        pi_(o.pi_capacity_chunks) {}

  SimResult Run() {
    const absl::Time begin = absl::Now();
    wall_begin_ = begin;
    for (size_t s = 0; s < trace_.sessions.size(); ++s) {
      const Session& session = trace_.sessions[s];
      if (!session.turns.empty())
        Push(session.start_s + session.turns[0].delay_s, EventKind::kArrive, s, 0, 0);
    }
    double first = -1, last = 0;
    while (!events_.empty() && !Failed()) {
      Event e = events_.top();
      events_.pop();
      if (first < 0) first = e.t;
      last = e.t;
      Pace(e.t);
      Handle(e);
    }
    result_.makespan_s = first < 0 ? 0 : last - first;
    result_.wall_s = absl::ToDoubleSeconds(absl::Now() - begin);
    return std::move(result_);
  }

 private:
  bool Failed() const { return result_.errors >= static_cast<uint64_t>(o_.max_errors); }

  void Push(double t, EventKind kind, size_t session, size_t turn, size_t request) {
    events_.push(Event{t, seq_++, kind, session, turn, request});
  }

  // Holds real calls back until the virtual clock, scaled by speedup, reaches them.
  void Pace(double t) {
    if (o_.speedup <= 0) return;
    const absl::Time due = wall_begin_ + absl::Seconds(t / o_.speedup);
    const absl::Time now = absl::Now();
    if (due > now) {
      absl::SleepFor(due - now);
    } else {
      result_.max_lag_s = std::max(result_.max_lag_s, absl::ToDoubleSeconds(now - due));
    }
  }

  void Error(const absl::Status& s) {
    if (result_.errors++ == 0) result_.first_error = s.ToString();
  }

  // Virtual duration of a real transfer of byte_scale of the model's bytes.
  double Scaled(double seconds) const { return seconds / o_.byte_scale; }

  void Handle(const Event& e) {
    switch (e.kind) {
      case EventKind::kArrive:
        Arrive(e);
        break;
      case EventKind::kGpuReady:
        GpuReady(e);
        break;
      case EventKind::kPrefillDone:
        PrefillDone(e);
        break;
      case EventKind::kDecodeDone:
        DecodeDone(e);
        break;
    }
  }

  const Turn& TurnOf(const Request& r) const { return trace_.sessions[r.session].turns[r.turn]; }

  void Arrive(const Event& e) {
    Request r;
    r.session = e.session;
    r.turn = e.turn;
    r.arrival = e.t;
    const Turn& turn = trace_.sessions[e.session].turns[e.turn];
    r.keys = chain_.PrefixKeys(turn.prompt);
    const size_t engine_hits = engine_.MatchPrefix(r.keys);
    size_t hits = engine_hits;
    r.put_from = r.keys.size();
    double ready = e.t;
    if (store_ != nullptr && engine_hits < r.keys.size()) {
      ready = FetchFromStore(r, engine_hits, e.t, &hits);
    }
    const uint64_t prompt = turn.prompt.size();
    result_.requests++;
    result_.prompt_tokens += prompt;
    result_.engine_hit_tokens += engine_hits * o_.chunk_tokens;
    r.hit_tokens = std::min<uint64_t>(hits * o_.chunk_tokens, prompt - 1);  // one token computes
    CountPositionIndependent(turn, hits);
    requests_.push_back(std::move(r));
    Push(ready, EventKind::kGpuReady, e.session, e.turn, requests_.size() - 1);
  }

  // Lookup and fetch of the chunks after the engine's hits; returns when they are in GPU
  // memory and sets *hits to the chunks the prefill can skip.
  double FetchFromStore(Request& r, size_t engine_hits, double now, size_t* hits) {
    absl::StatusOr<LookupReply> found = store_->Lookup(r.keys, SessionId(r));
    result_.lookups++;
    if (!found.ok()) {
      Error(found.status());
      return now;
    }
    const double looked_up = now + found->seconds;
    r.put_from = found->hits;
    if (found->hits <= engine_hits) return looked_up;
    std::vector<bool> nvme(found->nvme.begin() + engine_hits, found->nvme.end());
    if (o_.advisor != nullptr) {
      std::vector<ChunkTier> tiers;
      for (bool n : nvme) tiers.push_back(n ? ChunkTier::kNvme : ChunkTier::kDram);
      const uint64_t cached = engine_hits * o_.chunk_tokens;
      const uint32_t fetch = o_.advisor->ChunksToFetch(tiers, o_.chunk_tokens,
                                                       TurnOf(r).prompt.size() - cached, cached);
      result_.declined_chunks += nvme.size() - std::min<size_t>(fetch, nvme.size());
      nvme.resize(std::min<size_t>(nvme.size(), fetch));
    }
    if (nvme.empty()) return looked_up;  // recomputing is faster
    return Fetch(r, engine_hits, nvme, looked_up, hits);
  }

  // Tells the advisor of a fetch: one of DRAM chunks only informs DRAM; one with NVMe
  // chunks informs NVMe with their bytes and what is left of the time after the DRAM
  // chunks' share at DRAM's estimated rate (one request, one measured time).
  void Record(uint32_t dram_chunks, uint32_t nvme_chunks, double seconds) {
    if (o_.advisor == nullptr) return;
    if (nvme_chunks == 0) {
      o_.advisor->RecordFetch(ChunkTier::kDram, dram_chunks * o_.chunk_model_bytes, seconds);
      return;
    }
    const double dram_s =
        dram_chunks * o_.chunk_model_bytes / o_.advisor->BandwidthBytesPerSecond(ChunkTier::kDram);
    o_.advisor->RecordFetch(ChunkTier::kNvme, nvme_chunks * o_.chunk_model_bytes, seconds - dram_s);
  }

  // Fetches the nvme.size() chunks after the engine's hits once the fetch link is free.
  double Fetch(Request& r, size_t engine_hits, const std::vector<bool>& nvme, double ready,
               size_t* hits) {
    absl::StatusOr<FetchReply> got =
        store_->Fetch(absl::MakeConstSpan(r.keys).subspan(engine_hits, nvme.size()), 0);
    if (!got.ok()) {
      Error(got.status());
      r.put_from = engine_hits;
      return ready;
    }
    if (got->fetched < nvme.size()) r.put_from = engine_hits + got->fetched;
    uint32_t nvme_chunks = 0;
    for (uint32_t i = 0; i < got->fetched; ++i) {
      nvme_chunks += nvme[i] ? 1 : 0;
      (nvme[i] ? result_.nvme_hit_tokens : result_.dram_hit_tokens) += o_.chunk_tokens;
    }
    const uint64_t bytes = got->fetched * o_.chunk_model_bytes;
    result_.fetched_model_bytes += bytes;
    result_.wire_bytes += WireBytes(got->fetched);
    *hits = engine_hits + got->fetched;
    const double start = std::max(ready, fetch_link_free_);
    fetch_link_free_ = start + Scaled(got->seconds);
    result_.transfer_s += Scaled(got->seconds);
    if (got->fetched > 0) Record(got->fetched - nvme_chunks, nvme_chunks, Scaled(got->seconds));
    return fetch_link_free_;
  }

  uint64_t WireBytes(uint64_t chunks) const {
    return chunks * static_cast<uint64_t>(std::llround(o_.chunk_model_bytes * o_.byte_scale));
  }

  // Recomputed chunks whose content was cached at some position; then records this
  // prompt's chunk contents.
  void CountPositionIndependent(const Turn& turn, size_t hits) {
    const size_t chunks = turn.prompt.size() / o_.chunk_tokens;
    std::vector<Key128> pi(chunks);
    for (size_t i = 0; i < chunks; ++i) {
      pi[i] = chain_.PositionIndependentKey(
          absl::MakeConstSpan(turn.prompt).subspan(i * o_.chunk_tokens, o_.chunk_tokens));
      if (i >= hits && pi_.Contains(pi[i])) result_.pi_extra_tokens += o_.chunk_tokens;
    }
    pi_.Insert(pi);
  }

  void GpuReady(const Event& e) {
    Request& r = requests_[e.request];
    const Turn& turn = TurnOf(r);
    const double seconds = o_.cost.PrefillSeconds(turn.prompt.size() - r.hit_tokens, r.hit_tokens);
    const double start = std::max(e.t, gpu_free_);
    gpu_free_ = start + seconds;
    result_.gpu_prefill_s += seconds;
    Push(gpu_free_, EventKind::kPrefillDone, e.session, e.turn, e.request);
  }

  void PrefillDone(const Event& e) {
    Request& r = requests_[e.request];
    const Turn& turn = TurnOf(r);
    result_.ttft_s.push_back(e.t - r.arrival);
    engine_.Insert(r.keys);
    PutChunks(r, r.keys, r.put_from, e.t);
    Push(e.t + o_.cost.DecodeSeconds(turn.output.size()), EventKind::kDecodeDone, e.session, e.turn,
         e.request);
  }

  void DecodeDone(const Event& e) {
    Request& r = requests_[e.request];
    const Turn& turn = TurnOf(r);
    std::vector<int32_t> all = turn.prompt;
    all.insert(all.end(), turn.output.begin(), turn.output.end());
    std::vector<Key128> keys = chain_.PrefixKeys(all);
    if (keys.size() > r.keys.size()) {
      engine_.Insert(absl::MakeConstSpan(keys).subspan(r.keys.size()));
      PutChunks(r, keys, r.keys.size(), e.t);
    }
    const Session& session = trace_.sessions[e.session];
    if (e.turn + 1 < session.turns.size()) {
      Push(e.t + session.turns[e.turn + 1].delay_s, EventKind::kArrive, e.session, e.turn + 1, 0);
    }
    r.keys.clear();
    r.keys.shrink_to_fit();
  }

  // With session hints, one id per multi-turn session (0: none).
  uint64_t SessionId(const Request& r) const {
    const bool multi_turn = trace_.sessions[r.session].turns.size() > 1;
    return o_.hints.session && multi_turn ? r.session + 1 : 0;
  }

  PutHints HintsFor(const Request& r, const std::vector<Key128>& keys, size_t i) const {
    PutHints h;
    h.session_id = SessionId(r);
    if (o_.hints.parent && i > 0) {
      h.has_parent = true;
      h.parent = keys[i - 1];
    }
    const double pause = TurnOf(r).known_pause_s;
    if (o_.hints.ttl && pause > 0) {
      const double ttl_s = (1.5 * pause + 1) / (o_.speedup > 0 ? o_.speedup : 1);
      h.ttl_ms = static_cast<uint32_t>(std::ceil(ttl_s * 1000));
    }
    return h;
  }

  // Puts keys[from..) asynchronously: the put link is busy, nobody waits.
  void PutChunks(const Request& r, const std::vector<Key128>& keys, size_t from, double now) {
    if (store_ == nullptr || from >= keys.size() || Failed()) return;
    std::vector<PutChunk> chunks;
    for (size_t i = from; i < keys.size(); ++i) chunks.push_back({keys[i], HintsFor(r, keys, i)});
    absl::StatusOr<PutReply> put = store_->Put(chunks);
    if (!put.ok()) {
      Error(put.status());
      return;
    }
    result_.put_refused_chunks += put->refused;
    if (put->refused > 0 && result_.first_error.empty()) result_.first_error = put->first_error;
    result_.put_model_bytes += chunks.size() * o_.chunk_model_bytes;
    result_.wire_bytes += WireBytes(chunks.size());
    const double start = std::max(now, put_link_free_);
    put_link_free_ = start + Scaled(put->seconds);
    result_.transfer_s += Scaled(put->seconds);
  }

  const Trace& trace_;
  const KeyChain& chain_;
  const SimOptions& o_;
  RemoteStore* store_;
  EngineCache engine_;
  EngineCache pi_;
  std::priority_queue<Event, std::vector<Event>, std::greater<Event>> events_;
  std::vector<Request> requests_;
  uint64_t seq_ = 0;
  double gpu_free_ = 0, fetch_link_free_ = 0, put_link_free_ = 0;
  absl::Time wall_begin_;
  SimResult result_;
};

}  // namespace

std::string HintOptions::Name() const {
  std::vector<std::string> parts;
  if (session) parts.push_back("session");
  if (parent) parts.push_back("parent");
  if (ttl) parts.push_back("ttl");
  return parts.empty() ? "none" : absl::StrJoin(parts, "+");
}

SimResult Simulate(const Trace& trace, const KeyChain& chain, const SimOptions& options,
                   RemoteStore* store) {
  return Simulation(trace, chain, options, store).Run();
}

uint64_t WorkingSetChunks(const Trace& trace, const KeyChain& chain) {
  absl::flat_hash_set<Key128> keys;
  for (const Session& s : trace.sessions) {
    for (const Turn& t : s.turns) {
      std::vector<int32_t> all = t.prompt;
      all.insert(all.end(), t.output.begin(), t.output.end());
      for (const Key128& k : chain.PrefixKeys(all)) keys.insert(k);
    }
  }
  return keys.size();
}

uint64_t LargestRequestChunks(const Trace& trace, uint32_t chunk_tokens) {
  uint64_t most = 0;
  for (const Session& s : trace.sessions) {
    for (const Turn& t : s.turns) {
      most = std::max<uint64_t>(most, (t.prompt.size() + t.output.size()) / chunk_tokens);
    }
  }
  return most;
}

}  // namespace kvstash::bench::workload
