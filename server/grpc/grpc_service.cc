#include "server/grpc/grpc_service.h"

#include <string>

#include "proto/status_map.h"
#include "server/grpc/get_reactor.h"
#include "server/grpc/put_reactor.h"

namespace kvstash::server {

namespace {

// Answers one unary call through the request layer, measured: request and response
// bytes, latency and outcome. Unary calls are answered inline, and count in
// ServiceEnv::unary_in_handler meanwhile.
template <typename Req, typename Resp>
grpc::ServerUnaryReactor* AnswerUnary(const Requests& requests, Op op,
                                      grpc::CallbackServerContext* context, const Req& request,
                                      Resp* response) {
  const auto start = TransportMetrics::Clock::now();
  const ServiceEnv& env = requests.env();
  env.unary_in_handler.fetch_add(1);
  requests.metrics().AddReceivedBytes(request.ByteSizeLong());
  absl::StatusOr<CallAuth> caller = AuthenticateCall(requests, op, *context);
  const absl::Status status =
      caller.ok() ? requests.Unary(*caller, request, response) : caller.status();
  if (status.ok()) requests.metrics().AddSentBytes(response->ByteSizeLong());
  requests.RecordCall(op, status.code(), start);
  grpc::ServerUnaryReactor* reactor = context->DefaultReactor();
  reactor->Finish(wire::ToGrpcStatus(status));
  env.unary_in_handler.fetch_sub(1);
  return reactor;
}

}  // namespace

grpc::ServerUnaryReactor* KvStashService::RegisterNamespace(
    grpc::CallbackServerContext* context, const v1::RegisterNamespaceRequest* request,
    v1::RegisterNamespaceResponse* response) {
  return AnswerUnary(requests_, Op::kRegisterNamespace, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::Lookup(grpc::CallbackServerContext* context,
                                                 const v1::LookupRequest* request,
                                                 v1::LookupResponse* response) {
  return AnswerUnary(requests_, Op::kLookup, context, *request, response);
}

grpc::ServerReadReactor<grpc::ByteBuffer>* KvStashService::Put(grpc::CallbackServerContext* context,
                                                               grpc::ByteBuffer* response) {
  return NewPutReactor(&requests_, context, response);
}

grpc::ServerWriteReactor<grpc::ByteBuffer>* KvStashService::Get(
    grpc::CallbackServerContext* context, const grpc::ByteBuffer* request) {
  return NewGetReactor(&requests_, delivery_, context, request);
}

grpc::ServerUnaryReactor* KvStashService::Exists(grpc::CallbackServerContext* context,
                                                 const v1::KeysRequest* request,
                                                 v1::ExistsResponse* response) {
  return AnswerUnary(requests_, Op::kExists, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::Delete(grpc::CallbackServerContext* context,
                                                 const v1::KeysRequest* request,
                                                 v1::DeleteResponse* response) {
  return AnswerUnary(requests_, Op::kDelete, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::Stats(grpc::CallbackServerContext* context,
                                                const v1::StatsRequest* request,
                                                v1::StatsResponse* response) {
  return AnswerUnary(requests_, Op::kStats, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::Health(grpc::CallbackServerContext* context,
                                                 const v1::HealthRequest* request,
                                                 v1::HealthResponse* response) {
  return AnswerUnary(requests_, Op::kHealth, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::ListNamespaces(grpc::CallbackServerContext* context,
                                                         const v1::ListNamespacesRequest* request,
                                                         v1::ListNamespacesResponse* response) {
  return AnswerUnary(requests_, Op::kListNamespaces, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::ClearNamespace(grpc::CallbackServerContext* context,
                                                         const v1::ClearNamespaceRequest* request,
                                                         v1::ClearNamespaceResponse* response) {
  return AnswerUnary(requests_, Op::kClearNamespace, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::Pin(grpc::CallbackServerContext* context,
                                              const v1::PinRequest* request,
                                              v1::PinResponse* response) {
  return AnswerUnary(requests_, Op::kPin, context, *request, response);
}

grpc::ServerUnaryReactor* KvStashService::EndSession(grpc::CallbackServerContext* context,
                                                     const v1::EndSessionRequest* request,
                                                     v1::EndSessionResponse* response) {
  return AnswerUnary(requests_, Op::kEndSession, context, *request, response);
}

}  // namespace kvstash::server
