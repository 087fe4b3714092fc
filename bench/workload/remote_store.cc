#include "bench/workload/remote_store.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"

namespace kvstash::bench::workload {
namespace {

double SecondsSince(absl::Time begin) { return absl::ToDoubleSeconds(absl::Now() - begin); }

// Chunk-sized scratch buffers: fetches land in `in`, puts send `out` (its bytes vary per
// chunk so no store could deduplicate them). `in` starts at the largest fetch, written once,
// so no fetch pays the first touch of its pages (an engine's KV buffers are long-lived).
class Buffers {
 public:
  Buffers(size_t chunk_bytes, size_t max_fetch_chunks)
      : chunk_bytes_(chunk_bytes), in_(chunk_bytes * max_fetch_chunks, 1), out_(chunk_bytes) {
    for (size_t i = 0; i < out_.size(); ++i) out_[i] = static_cast<char>(i * 131 + 7);
  }
  size_t chunk_bytes() const { return chunk_bytes_; }
  char* In(size_t chunks) {
    if (in_.size() < chunks * chunk_bytes_) in_.resize(chunks * chunk_bytes_);
    return in_.data();
  }
  const char* Out() const { return out_.data(); }

 private:
  size_t chunk_bytes_;
  std::vector<char> in_;
  std::vector<char> out_;
};

class KvstashStore : public RemoteStore {
 public:
  KvstashStore(std::unique_ptr<Client> client, NamespaceHandle ns, size_t chunk_bytes,
               size_t max_fetch_chunks)
      : client_(std::move(client)), ns_(ns), buffers_(chunk_bytes, max_fetch_chunks) {}

  // Puts one chunk, gets it a few times and deletes it, so the connection, the transport's
  // memory registrations and the daemon's pages are set up before the first measured
  // fetch: a first observation replaces the fetch advisor's prior outright. Best effort
  // past the put (a tier too small for the chunk just leaves less warmed).
  absl::Status Warm() {
    const Key128 key = {0xff, 0xfe, 0xfd, 0xfc, 0xfb, 0xfa, 0xf9, 0xf8, 0xf7};
    PutItem put;
    put.key = key;
    put.data = buffers_.Out();
    put.size = buffers_.chunk_bytes();
    if (absl::Status s = client_->Put(ns_, absl::MakeSpan(&put, 1)); !s.ok()) return s;
    for (int i = 0; i < 3; ++i) {
      GetItem get;
      get.key = key;
      get.data = buffers_.In(1);
      get.capacity = buffers_.chunk_bytes();
      client_->Get(ns_, absl::MakeSpan(&get, 1), 0).IgnoreError();
    }
    const Key128 keys[] = {key};
    client_->Delete(ns_, keys).status().IgnoreError();
    return absl::OkStatus();
  }

  absl::StatusOr<LookupReply> Lookup(absl::Span<const Key128> keys, uint64_t session_id) override {
    const absl::Time begin = absl::Now();
    absl::StatusOr<LookupResult> r = client_->Lookup(ns_, keys, kLeaseMs, session_id);
    if (!r.ok()) return r.status();
    LookupReply reply;
    reply.seconds = SecondsSince(begin);
    reply.hits = r->hit_count;
    reply.lease_id = r->lease_id;
    for (ChunkTier t : r->tiers) reply.nvme.push_back(t == ChunkTier::kNvme);
    reply.nvme.resize(reply.hits, false);
    return reply;
  }

  absl::StatusOr<FetchReply> Fetch(absl::Span<const Key128> keys, uint64_t lease_id) override {
    const size_t bytes = buffers_.chunk_bytes();
    char* in = buffers_.In(keys.size());
    items_.assign(keys.size(), GetItem{});
    for (size_t i = 0; i < keys.size(); ++i) {
      items_[i].key = keys[i];
      items_[i].data = in + i * bytes;
      items_[i].capacity = bytes;
    }
    const absl::Time begin = absl::Now();
    if (absl::Status s = client_->Get(ns_, absl::MakeSpan(items_), lease_id); !s.ok()) return s;
    FetchReply reply;
    reply.seconds = SecondsSince(begin);
    while (reply.fetched < items_.size() && items_[reply.fetched].status.ok() &&
           items_[reply.fetched].size == bytes) {
      ++reply.fetched;
    }
    return reply;
  }

  absl::StatusOr<PutReply> Put(absl::Span<const PutChunk> chunks) override {
    std::vector<PutItem> items(chunks.size());
    for (size_t i = 0; i < chunks.size(); ++i) {
      items[i].key = chunks[i].key;
      items[i].data = buffers_.Out();
      items[i].size = buffers_.chunk_bytes();
      items[i].hints = chunks[i].hints;
    }
    const absl::Time begin = absl::Now();
    if (absl::Status s = client_->Put(ns_, absl::MakeSpan(items)); !s.ok()) return s;
    PutReply reply;
    reply.seconds = SecondsSince(begin);
    for (const PutItem& item : items) {
      if (item.status.ok()) {
        ++reply.stored;
      } else {
        if (reply.refused++ == 0) reply.first_error = item.status.ToString();
      }
    }
    return reply;
  }

 private:
  // No lease: the fetch follows the lookup at once on this thread, and a lease on hits
  // the engine already holds (never fetched) would pin them until it expired.
  static constexpr uint32_t kLeaseMs = 0;
  std::unique_ptr<Client> client_;
  NamespaceHandle ns_;
  Buffers buffers_;
  std::vector<GetItem> items_;
};

class PeerStore : public RemoteStore {
 public:
  PeerStore(std::unique_ptr<Conn> conn, size_t chunk_bytes, size_t max_fetch_chunks)
      : conn_(std::move(conn)), buffers_(chunk_bytes, max_fetch_chunks) {}

  absl::StatusOr<LookupReply> Lookup(absl::Span<const Key128> keys, uint64_t) override {
    const absl::Time begin = absl::Now();
    absl::StatusOr<std::vector<bool>> present = conn_->Present(keys);
    if (!present.ok()) return present.status();
    LookupReply reply;
    reply.seconds = SecondsSince(begin);
    while (reply.hits < present->size() && (*present)[reply.hits]) ++reply.hits;
    reply.nvme.assign(reply.hits, false);
    return reply;
  }

  absl::StatusOr<FetchReply> Fetch(absl::Span<const Key128> keys, uint64_t) override {
    const size_t bytes = buffers_.chunk_bytes();
    char* in = buffers_.In(keys.size());
    FetchReply reply;
    const absl::Time begin = absl::Now();
    for (size_t i = 0; i < keys.size(); ++i) {
      size_t size = 0;
      absl::Status s = conn_->Get(keys[i], absl::MakeSpan(in + i * bytes, bytes), &size);
      if (absl::IsNotFound(s)) break;  // evicted since the lookup
      if (!s.ok()) return s;
      if (size != bytes) break;
      ++reply.fetched;
    }
    reply.seconds = SecondsSince(begin);
    return reply;
  }

  absl::StatusOr<PutReply> Put(absl::Span<const PutChunk> chunks) override {
    PutReply reply;
    const absl::Time begin = absl::Now();
    for (const PutChunk& c : chunks) {
      absl::Status s =
          conn_->Put(c.key, absl::MakeConstSpan(buffers_.Out(), buffers_.chunk_bytes()));
      if (s.ok()) {
        ++reply.stored;
      } else if (absl::IsResourceExhausted(s) || absl::IsInternal(s)) {
        // The peer refused the value (out of memory); the connection is still usable.
        if (reply.refused++ == 0) reply.first_error = s.ToString();
      } else {
        return s;
      }
    }
    reply.seconds = SecondsSince(begin);
    return reply;
  }

 private:
  std::unique_ptr<Conn> conn_;
  Buffers buffers_;
};

}  // namespace

absl::StatusOr<std::unique_ptr<RemoteStore>> NewKvstashStore(std::unique_ptr<Client> client,
                                                             const Namespace& ns,
                                                             size_t chunk_bytes,
                                                             size_t max_fetch_chunks) {
  absl::StatusOr<NamespaceHandle> handle = client->OpenNamespace(ns);
  if (!handle.ok()) return handle.status();
  auto store =
      std::make_unique<KvstashStore>(std::move(client), *handle, chunk_bytes, max_fetch_chunks);
  if (absl::Status s = store->Warm(); !s.ok()) return s;
  return std::unique_ptr<RemoteStore>(std::move(store));
}

std::unique_ptr<RemoteStore> NewPeerStore(std::unique_ptr<Conn> conn, size_t chunk_bytes,
                                          size_t max_fetch_chunks) {
  return std::make_unique<PeerStore>(std::move(conn), chunk_bytes, max_fetch_chunks);
}

}  // namespace kvstash::bench::workload
