#include "bench/workload/trace.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "bench/workload/rng.h"

namespace kvstash::bench::workload {
namespace {

using Tokens = std::vector<int32_t>;
constexpr int32_t kVocab = 128256;  // Llama 3's vocabulary

const std::pair<WorkloadKind, const char*> kNames[] = {
    {WorkloadKind::kChat, "chat"},     {WorkloadKind::kAnalytics, "analytics"},
    {WorkloadKind::kCode, "code"},     {WorkloadKind::kRag, "rag"},
    {WorkloadKind::kAgents, "agents"}, {WorkloadKind::kDocQa, "docqa"}};

Tokens RandomTokens(Rng& rng, int64_t n) {
  Tokens t(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int32_t& x : t) x = static_cast<int32_t>(rng.Next() % kVocab);
  return t;
}

void Append(Tokens& to, const Tokens& from) { to.insert(to.end(), from.begin(), from.end()); }

// A log-normal length (mean, sigma) clamped to [lo, hi].
int64_t Length(Rng& rng, double mean, double sigma, int64_t lo, int64_t hi) {
  return std::clamp<int64_t>(std::llround(rng.LogNormalMean(mean, sigma)), lo, hi);
}

// Builds traces; every session draws from its own stream so sessions do not shift each
// other when one of them changes.
class Generator {
 public:
  explicit Generator(const TraceOptions& o) : o_(o), shared_(o.seed, 0) {}

  int64_t Sessions(double full) const {
    return std::max<int64_t>(1, std::llround(full * o_.scale));
  }
  // Full or short value.
  double Pick(double full, double short_form) const { return o_.short_form ? short_form : full; }
  // `chunks` whole chunks of tokens.
  int64_t Chunks(int64_t chunks) const { return chunks * o_.chunk_tokens; }
  Rng SessionRng(int64_t i) const { return Rng(o_.seed, static_cast<uint64_t>(i) + 1); }
  Rng& shared() { return shared_; }

  // Start times of n sessions at `rate_per_s` on average (poisson or bursty).
  std::vector<double> Starts(int64_t n, double rate_per_s) {
    Rng rng(o_.seed, 0x5eed);
    std::vector<double> starts;
    double t = 0;
    for (int64_t i = 0; i < n; ++i) {
      starts.push_back(t);
      const double mean = 1.0 / rate_per_s;
      t += o_.arrivals == Arrivals::kPoisson ? rng.Exponential(mean)
                                             : rng.GammaMeanCv(mean, o_.burst_cv);
    }
    return starts;
  }

 private:
  const TraceOptions& o_;
  Rng shared_;
};

// An agent knows it is about to call a tool and wait for it.
void FillKnownPauses(Trace& trace) {
  if (trace.kind != WorkloadKind::kAgents) return;
  for (Session& s : trace.sessions) {
    for (size_t i = 0; i + 1 < s.turns.size(); ++i)
      s.turns[i].known_pause_s = s.turns[i + 1].delay_s;
  }
}

// Multi-turn chat: a shared system prompt, ShareGPT-like turn lengths (mean input 161,
// output 338 tokens, as the vLLM paper reports for ShareGPT), the whole history resent.
void Chat(Generator& g, const TraceOptions& o, Trace& trace) {
  const Tokens system = RandomTokens(g.shared(), g.Chunks(g.Pick(2, 2)));
  const int64_t users = g.Sessions(o.chat_users);
  const std::vector<double> starts = g.Starts(users, users / 30.0);
  for (int64_t u = 0; u < users; ++u) {
    Rng rng = g.SessionRng(u);
    Session s{starts[u], {}};
    Tokens history = system;
    const int64_t turns = std::min<int64_t>(2 + std::floor(rng.Exponential(3)), g.Pick(10, 4));
    for (int64_t k = 0; k < turns; ++k) {
      Turn t;
      t.delay_s = k == 0 ? 0 : rng.Exponential(g.Pick(20, 5));
      Append(history, RandomTokens(rng, Length(rng, g.Pick(161, 40), 1.0, 4, g.Pick(1024, 128))));
      t.prompt = history;
      t.output = RandomTokens(rng, Length(rng, g.Pick(338, 40), 0.8, 8, g.Pick(1024, 128)));
      Append(history, t.output);
      s.turns.push_back(std::move(t));
    }
    trace.sessions.push_back(std::move(s));
  }
}

// One long instruction prefix, then many short records with tiny answers.
void Analytics(Generator& g, const TraceOptions& o, Trace& trace) {
  const Tokens instruction = RandomTokens(g.shared(), g.Chunks(g.Pick(8, 8)));
  const int64_t records = g.Sessions(2000);
  const std::vector<double> starts = g.Starts(records, 20);
  for (int64_t r = 0; r < records; ++r) {
    Rng rng = g.SessionRng(r);
    Turn t;
    t.prompt = instruction;
    Append(t.prompt, RandomTokens(rng, Length(rng, g.Pick(120, 40), 0.5, 16, 512)));
    t.output = RandomTokens(rng, rng.UniformInt(1, 8));
    trace.sessions.push_back(Session{starts[r], {std::move(t)}});
  }
}

// A file re-sent for completion after small edits near its end; sometimes an edit is
// undone (the prompt goes back to an earlier version) or the completion accepted.
void Code(Generator& g, const TraceOptions& o, Trace& trace) {
  const int64_t files = g.Sessions(16);
  const std::vector<double> starts = g.Starts(files, files / 20.0);
  for (int64_t f = 0; f < files; ++f) {
    Rng rng = g.SessionRng(f);
    Tokens doc =
        RandomTokens(rng, Length(rng, g.Pick(3000, 300), 0.4, g.Pick(512, 64), g.Pick(8192, 800)));
    std::vector<Tokens> undo;
    Session s{starts[f], {}};
    const int64_t completions = g.Pick(20, 6);
    for (int64_t c = 0; c < completions; ++c) {
      Turn t;
      t.delay_s = c == 0 ? 0 : rng.Exponential(g.Pick(3, 1));
      if (c > 0 && !undo.empty() && rng.Bernoulli(0.25)) {
        doc = undo.back();
        undo.pop_back();
      } else if (c > 0) {
        undo.push_back(doc);
        const int64_t tail = std::max<int64_t>(16, static_cast<int64_t>(doc.size()) / 10);
        const int64_t pos = static_cast<int64_t>(doc.size()) - rng.UniformInt(1, tail);
        const int64_t erase = std::min<int64_t>(rng.UniformInt(0, 8), doc.size() - pos);
        doc.erase(doc.begin() + pos, doc.begin() + pos + erase);
        const Tokens typed = RandomTokens(rng, rng.UniformInt(1, 24));
        doc.insert(doc.begin() + pos, typed.begin(), typed.end());
      }
      t.prompt = doc;
      t.output = RandomTokens(rng, rng.UniformInt(16, 64));
      if (rng.Bernoulli(0.4)) Append(doc, t.output);  // accepted
      s.turns.push_back(std::move(t));
    }
    trace.sessions.push_back(std::move(s));
  }
}

// k documents retrieved by Zipf popularity, in varying order, then a question. Documents
// are whole chunks so position-independent chunk keys of one document always match.
void Rag(Generator& g, const TraceOptions& o, Trace& trace) {
  const Tokens system = RandomTokens(g.shared(), g.Chunks(1));
  std::vector<Tokens> corpus(static_cast<size_t>(g.Pick(200, 30)));
  for (Tokens& d : corpus) d = RandomTokens(g.shared(), g.Chunks(g.shared().UniformInt(1, 3)));
  const int64_t queries = g.Sessions(400);
  const int k = static_cast<int>(g.Pick(4, 3));
  const std::vector<double> starts = g.Starts(queries, 2);
  for (int64_t q = 0; q < queries; ++q) {
    Rng rng = g.SessionRng(q);
    std::vector<int64_t> picked;
    while (static_cast<int>(picked.size()) < k) {
      const int64_t d = rng.Zipf(static_cast<int64_t>(corpus.size()), 1.1);
      if (std::find(picked.begin(), picked.end(), d) == picked.end()) picked.push_back(d);
    }
    for (size_t i = picked.size(); i > 1; --i)
      std::swap(picked[i - 1], picked[rng.UniformInt(0, i - 1)]);
    Turn t;
    t.prompt = system;
    for (int64_t d : picked) Append(t.prompt, corpus[d]);
    Append(t.prompt, RandomTokens(rng, rng.UniformInt(20, 80)));
    t.output = RandomTokens(rng, Length(rng, g.Pick(120, 30), 0.6, 8, 512));
    trace.sessions.push_back(Session{starts[q], {std::move(t)}});
  }
}

// Tool loops: a shared system prompt with tool schemas, a task, then steps of tool call,
// a pause of seconds while the tool runs, and its result appended to the history.
void Agents(Generator& g, const TraceOptions& o, Trace& trace) {
  const Tokens tools = RandomTokens(g.shared(), g.Chunks(4));
  const int64_t agents = g.Sessions(24);
  const std::vector<double> starts = g.Starts(agents, agents / 20.0);
  for (int64_t a = 0; a < agents; ++a) {
    Rng rng = g.SessionRng(a);
    Session s{starts[a], {}};
    Tokens history = tools;
    Append(history, RandomTokens(rng, rng.UniformInt(g.Pick(100, 10), g.Pick(300, 40))));
    const int64_t steps = rng.UniformInt(g.Pick(4, 3), g.Pick(12, 5));
    for (int64_t k = 0; k < steps; ++k) {
      Turn t;
      if (k > 0) {
        t.delay_s = std::clamp(rng.LogNormalMean(5, 1.0), 0.5, 60.0);  // the tool runs
        Append(history, RandomTokens(rng, rng.UniformInt(g.Pick(100, 10), g.Pick(1000, 80))));
      }
      t.prompt = history;
      const bool last = k + 1 == steps;
      t.output = RandomTokens(rng, last ? g.Pick(200, 30) : rng.UniformInt(30, g.Pick(150, 40)));
      Append(history, t.output);
      s.turns.push_back(std::move(t));
    }
    trace.sessions.push_back(std::move(s));
  }
}

// Long documents (10k-20k tokens), several questions each; answers are not resent.
void DocQa(Generator& g, const TraceOptions& o, Trace& trace) {
  const Tokens system = RandomTokens(g.shared(), g.Chunks(1));
  const int64_t docs = g.Sessions(12);
  const std::vector<double> starts = g.Starts(docs, docs / 60.0);
  for (int64_t d = 0; d < docs; ++d) {
    Rng rng = g.SessionRng(d);
    Tokens doc = system;
    Append(doc, RandomTokens(rng, rng.UniformInt(g.Pick(10000, 1000), g.Pick(20000, 2000))));
    Session s{starts[d], {}};
    const int64_t questions = rng.UniformInt(3, 6);
    for (int64_t q = 0; q < questions; ++q) {
      Turn t;
      t.delay_s = q == 0 ? 0 : rng.Exponential(g.Pick(30, 5));
      t.prompt = doc;
      Append(t.prompt, RandomTokens(rng, rng.UniformInt(15, 60)));
      t.output = RandomTokens(rng, Length(rng, g.Pick(150, 30), 0.6, 8, 512));
      s.turns.push_back(std::move(t));
    }
    trace.sessions.push_back(std::move(s));
  }
}

}  // namespace

const char* WorkloadName(WorkloadKind kind) {
  for (const auto& [k, name] : kNames) {
    if (k == kind) return name;
  }
  return "?";
}

absl::StatusOr<WorkloadKind> ParseWorkload(absl::string_view name) {
  std::vector<std::string> names;
  for (const auto& [k, n] : kNames) {
    if (n == name) return k;
    names.push_back(n);
  }
  return absl::InvalidArgumentError(
      absl::StrCat("unknown workload '", name, "'; known: ", absl::StrJoin(names, ", ")));
}

std::vector<WorkloadKind> AllWorkloads() {
  std::vector<WorkloadKind> all;
  for (const auto& [k, n] : kNames) all.push_back(k);
  return all;
}

uint64_t Trace::Requests() const {
  uint64_t n = 0;
  for (const Session& s : sessions) n += s.turns.size();
  return n;
}

absl::StatusOr<Trace> GenerateTrace(WorkloadKind kind, const TraceOptions& options) {
  if (options.chunk_tokens == 0) return absl::InvalidArgumentError("chunk_tokens must be > 0");
  if (!(options.scale > 0)) return absl::InvalidArgumentError("scale must be > 0");
  if (options.arrivals == Arrivals::kBursty && !(options.burst_cv > 0)) {
    return absl::InvalidArgumentError("burst_cv must be > 0");
  }
  Generator g(options);
  Trace trace;
  trace.kind = kind;
  switch (kind) {
    case WorkloadKind::kChat:
      Chat(g, options, trace);
      break;
    case WorkloadKind::kAnalytics:
      Analytics(g, options, trace);
      break;
    case WorkloadKind::kCode:
      Code(g, options, trace);
      break;
    case WorkloadKind::kRag:
      Rag(g, options, trace);
      break;
    case WorkloadKind::kAgents:
      Agents(g, options, trace);
      break;
    case WorkloadKind::kDocQa:
      DocQa(g, options, trace);
      break;
  }
  FillKnownPauses(trace);
  return trace;
}

}  // namespace kvstash::bench::workload
