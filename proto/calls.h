// The calls of the wire API, listed once: the server's per-call metrics and the UCX op
// codes are generated from this table, and the client's unary methods from its unary rows.
//
//   KVSTASH_CALLS(UNARY, STREAM): UNARY(Name, metric_name, ucx_op) for a call answered in
//   one message, STREAM(...) for one whose payload travels in frames (Put, Get). The
//   order is the server's metrics order; ucx_op is the RequestHeader.op value on the wire,
//   never reused (docs/protocol.md, "UCX data plane", lists each op's body and reply).
//
// Thread-safety: a macro; nothing runs.
#pragma once

#define KVSTASH_CALLS(UNARY, STREAM)                \
  UNARY(RegisterNamespace, "register_namespace", 2) \
  UNARY(Lookup, "lookup", 3)                        \
  STREAM(Put, "put", 7)                             \
  STREAM(Get, "get", 8)                             \
  UNARY(Exists, "exists", 4)                        \
  UNARY(Delete, "delete", 5)                        \
  UNARY(Stats, "stats", 6)                          \
  UNARY(Health, "health", 1)                        \
  UNARY(ListNamespaces, "list_namespaces", 13)      \
  UNARY(ClearNamespace, "clear_namespace", 14)      \
  UNARY(Pin, "pin", 15)                             \
  UNARY(EndSession, "end_session", 16)

// Helpers for KVSTASH_CALLS' users.
#define KVSTASH_CALL_ENUMERATOR(name, metric, ucx_op) k##name,
#define KVSTASH_CALL_SKIP(name, metric, ucx_op)
#define KVSTASH_CALL_COUNT(name, metric, ucx_op) +1
