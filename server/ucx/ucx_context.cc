#include "server/ucx/ucx_context.h"

#include <cstdlib>

#include "absl/strings/str_cat.h"
#include "common/ucx_setup.h"
#include "proto/ucx_wire.h"
#include "server/ucx/ucx_options.h"

namespace kvstash::server::ucx {
namespace {

absl::Status UcsError(absl::string_view what, ucs_status_t s) {
  return absl::UnavailableError(absl::StrCat(what, ": ", ucs_status_string(s)));
}

// Applies the daemon's settings to a UCX configuration read from the environment; returns
// the TCP segment UCX will use.
absl::StatusOr<uint64_t> Configure(const UcxServerOptions& options, Logger* log,
                                   ucp_config_t* config) {
  // INVALID_ARGUMENT naming the setting; the caller prefixes "ucx: ".
  absl::StatusOr<uint64_t> segment =
      ucx_setup::ConfigureUcx(options.tls, options.tcp_segment_bytes, config);
  if (!segment.ok()) return segment.status();
  if (options.rndv_thresh_bytes != 0) {
    const std::string v = absl::StrCat(options.rndv_thresh_bytes);
    if (ucs_status_t s = ucp_config_modify(config, "RNDV_THRESH", v.c_str()); s != UCS_OK) {
      return UcsError("ucx.rndv_thresh_bytes", s);
    }
  }
  if (options.arena_as_file && getenv("UCX_ALLOC_PRIO") == nullptr) {
    // UCX's own order with `posix` (a /dev/shm file) first; where it cannot allocate,
    // `sysv` still can, and the arena is then only shared through UCX.
    if (ucs_status_t m =
            ucp_config_modify(config, "ALLOC_PRIO", "md:posix,md:sysv,huge,thp,md:*,mmap,heap");
        m != UCS_OK) {
      log->Warn("ucx: cannot set ALLOC_PRIO", {{"error", ucs_status_string(m)}});
    }
  }
  // Dead clients are noticed within a few seconds on every transport (UCX's default
  // keepalive takes 20 s on shared memory). An operator's UCX_KEEPALIVE_INTERVAL wins.
  if (getenv("UCX_KEEPALIVE_INTERVAL") == nullptr) {
    if (ucs_status_t m = ucp_config_modify(config, "KEEPALIVE_INTERVAL", "2s"); m != UCS_OK) {
      log->Warn("ucx: cannot set KEEPALIVE_INTERVAL", {{"error", ucs_status_string(m)}});
    }
  }
  return segment;
}

}  // namespace

absl::StatusOr<std::shared_ptr<UcxContext>> UcxContext::Create(const UcxServerOptions& options,
                                                               Logger* log) {
  ucp_config_t* config = nullptr;
  ucs_status_t s = ucp_config_read(nullptr, nullptr, &config);
  if (s != UCS_OK) return UcsError("ucp_config_read", s);
  absl::StatusOr<uint64_t> segment = Configure(options, log, config);
  absl::Status c = segment.status();
  ucp_context_h context = nullptr;
  if (c.ok()) {
    ucp_params_t params{};
    params.field_mask = UCP_PARAM_FIELD_FEATURES;
    // RMA: remote keys for the shared arena (clients map it; the daemon never issues RMA).
    params.features = UCP_FEATURE_AM | UCP_FEATURE_WAKEUP | UCP_FEATURE_RMA;
    s = ucp_init(&params, config, &context);
    if (s != UCS_OK) c = UcsError("ucp_init", s);
  }
  ucp_config_release(config);
  if (!c.ok()) return c;
  return std::shared_ptr<UcxContext>(
      new UcxContext(context, log, ucx_setup::AllowsSharedMemory(options.tls), *segment));
}

UcxContext::~UcxContext() { ucp_cleanup(context_); }

std::unique_ptr<SharedRegion> UcxContext::AllocateShared(uint64_t bytes) {
  if (!shared_memory_) return nullptr;
  ucp_mem_map_params_t params{};
  params.field_mask = UCP_MEM_MAP_PARAM_FIELD_LENGTH | UCP_MEM_MAP_PARAM_FIELD_FLAGS;
  params.length = bytes;
  params.flags = UCP_MEM_MAP_ALLOCATE;
  ucp_mem_h memh = nullptr;
  ucs_status_t s = ucp_mem_map(context_, &params, &memh);
  ucp_mem_attr_t attr{};
  attr.field_mask = UCP_MEM_ATTR_FIELD_ADDRESS | UCP_MEM_ATTR_FIELD_LENGTH;
  if (s == UCS_OK) s = ucp_mem_query(memh, &attr);
  void* packed = nullptr;
  size_t packed_len = 0;
  if (s == UCS_OK) s = ucp_rkey_pack(context_, memh, &packed, &packed_len);
  if (s != UCS_OK) {
    if (memh != nullptr) ucp_mem_unmap(context_, memh);
    log_->Warn(
        "ucx: cannot allocate the DRAM arena as shared memory (is /dev/shm large "
        "enough?); clients copy through UCX instead of mapping it",
        {{"bytes", bytes}, {"error", ucs_status_string(s)}});
    return nullptr;
  }
  std::string rkey(static_cast<const char*>(packed), packed_len);
  ucp_rkey_buffer_release(packed);
  return std::unique_ptr<SharedRegion>(new SharedRegion(
      shared_from_this(), memh, static_cast<uint8_t*>(attr.address), attr.length, std::move(rkey)));
}

SharedRegion::SharedRegion(std::shared_ptr<UcxContext> context, ucp_mem_h memh, uint8_t* data,
                           uint64_t size, std::string rkey)
    : context_(std::move(context)), memh_(memh), data_(data), size_(size), rkey_(std::move(rkey)) {}

SharedRegion::~SharedRegion() { ucp_mem_unmap(context_->handle(), memh_); }

}  // namespace kvstash::server::ucx
