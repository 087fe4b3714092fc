// Deterministic synthetic request traces for the workload benchmark: six workloads (chat,
// analytics, code completion, RAG, agents, long-document QA) as sessions of turns with token
// ids, output lengths and the pauses between turns. The same options and seed give the same
// trace on every platform (rng.h).
//
// Thread-safety: plain values; GenerateTrace is a pure function.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kvstash::bench::workload {

enum class WorkloadKind { kChat, kAnalytics, kCode, kRag, kAgents, kDocQa };

const char* WorkloadName(WorkloadKind kind);  // "chat", "analytics", "code", "rag", ...
absl::StatusOr<WorkloadKind> ParseWorkload(absl::string_view name);
std::vector<WorkloadKind> AllWorkloads();

// One request: the whole prompt as the engine receives it, and what it generates.
struct Turn {
  std::vector<int32_t> prompt;
  std::vector<int32_t> output;  // generated token ids (a later prompt may resend them)
  // Seconds between the previous turn's last token (or, for the first turn, the session's
  // start) and this request's arrival: think time, tool call, typing.
  double delay_s = 0;
  // Seconds until the session's next turn arrives after this one ends, where the
  // application knows it (an agent calling a tool, so it can say so with a TTL); else 0.
  double known_pause_s = 0;
};

// A conversation, an agent run, an editing session, one analytics record or RAG query.
struct Session {
  double start_s = 0;  // arrival of the first turn when delay_s is 0
  std::vector<Turn> turns;
};

struct Trace {
  WorkloadKind kind = WorkloadKind::kChat;
  std::vector<Session> sessions;
  uint64_t Requests() const;
};

enum class Arrivals { kPoisson, kBursty };

struct TraceOptions {
  uint64_t seed = 1;
  // Tokens per chunk: shared prefixes and RAG documents are whole chunks long, so they
  // start on a chunk boundary wherever they appear.
  uint32_t chunk_tokens = 256;
  // Session starts: Poisson, or Gamma inter-arrivals with coefficient of variation
  // burst_cv (bursty).
  Arrivals arrivals = Arrivals::kPoisson;
  double burst_cv = 4;
  // Multiplies every workload's session count (at least one session each).
  double scale = 1;
  // Small prompts (documents of 1-2k instead of 10-20k tokens, short prefixes) for smoke runs.
  bool short_form = false;
  // Chat: concurrent users, one conversation each (times scale).
  int chat_users = 64;
};

absl::StatusOr<Trace> GenerateTrace(WorkloadKind kind, const TraceOptions& options);

}  // namespace kvstash::bench::workload
