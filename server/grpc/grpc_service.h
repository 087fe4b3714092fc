// KvStashService: the kvstash.v1.KvStash gRPC service on the callback API.
//
// The unary calls are typed callback methods answered inline by the request layer
// (requests.h; they only touch in-memory state). Put and Get are raw methods (grpc::ByteBuffer) so
// their payloads bypass protobuf: see put_reactor.h and get_reactor.h. docs/protocol.md is the
// contract.
//
// Thread-safety: thread-safe; gRPC invokes methods from many threads at once.
#pragma once

#include <string>

#include "kvstash/v1/kvstash.grpc.pb.h"
#include "server/grpc/delivery_gate.h"
#include "server/grpc/grpc_auth.h"
#include "server/requests.h"
#include "server/service_env.h"

namespace kvstash::server {

namespace internal {
using v1::KvStash;
// Every method on the callback API; Put and Get take raw byte buffers.
using KvStashAdminBase =
    KvStash::WithCallbackMethod_ListNamespaces<KvStash::WithCallbackMethod_ClearNamespace<
        KvStash::WithCallbackMethod_Pin<KvStash::WithCallbackMethod_EndSession<KvStash::Service>>>>;
using KvStashCallbackBase = KvStash::WithCallbackMethod_RegisterNamespace<
    KvStash::WithCallbackMethod_Lookup<KvStash::WithRawCallbackMethod_Put<
        KvStash::WithRawCallbackMethod_Get<KvStash::WithCallbackMethod_Exists<
            KvStash::WithCallbackMethod_Delete<KvStash::WithCallbackMethod_Stats<
                KvStash::WithCallbackMethod_Health<KvStashAdminBase>>>>>>>>;
}  // namespace internal

class KvStashService final : public internal::KvStashCallbackBase {
 public:
  // `env` and `metrics` (this transport's) must outlive the service and every call it
  // serves; so must `delivery`, which holds the end of large responses while draining until
  // the client has them (null: calls end at once).
  KvStashService(ServiceEnv* env, TransportMetrics* metrics, DeliveryGate* delivery,
                 std::string version)
      : requests_(env, metrics, std::move(version)), delivery_(delivery) {}

  grpc::ServerUnaryReactor* RegisterNamespace(grpc::CallbackServerContext* context,
                                              const v1::RegisterNamespaceRequest* request,
                                              v1::RegisterNamespaceResponse* response) override;
  grpc::ServerUnaryReactor* Lookup(grpc::CallbackServerContext* context,
                                   const v1::LookupRequest* request,
                                   v1::LookupResponse* response) override;
  grpc::ServerReadReactor<grpc::ByteBuffer>* Put(grpc::CallbackServerContext* context,
                                                 grpc::ByteBuffer* response) override;
  grpc::ServerWriteReactor<grpc::ByteBuffer>* Get(grpc::CallbackServerContext* context,
                                                  const grpc::ByteBuffer* request) override;
  grpc::ServerUnaryReactor* Exists(grpc::CallbackServerContext* context,
                                   const v1::KeysRequest* request,
                                   v1::ExistsResponse* response) override;
  grpc::ServerUnaryReactor* Delete(grpc::CallbackServerContext* context,
                                   const v1::KeysRequest* request,
                                   v1::DeleteResponse* response) override;
  grpc::ServerUnaryReactor* Stats(grpc::CallbackServerContext* context,
                                  const v1::StatsRequest* request,
                                  v1::StatsResponse* response) override;
  grpc::ServerUnaryReactor* Health(grpc::CallbackServerContext* context,
                                   const v1::HealthRequest* request,
                                   v1::HealthResponse* response) override;
  grpc::ServerUnaryReactor* ListNamespaces(grpc::CallbackServerContext* context,
                                           const v1::ListNamespacesRequest* request,
                                           v1::ListNamespacesResponse* response) override;
  grpc::ServerUnaryReactor* ClearNamespace(grpc::CallbackServerContext* context,
                                           const v1::ClearNamespaceRequest* request,
                                           v1::ClearNamespaceResponse* response) override;
  grpc::ServerUnaryReactor* Pin(grpc::CallbackServerContext* context, const v1::PinRequest* request,
                                v1::PinResponse* response) override;
  grpc::ServerUnaryReactor* EndSession(grpc::CallbackServerContext* context,
                                       const v1::EndSessionRequest* request,
                                       v1::EndSessionResponse* response) override;

 private:
  const Requests requests_;  // over the env and the gRPC metrics
  DeliveryGate* const delivery_;
};

}  // namespace kvstash::server
