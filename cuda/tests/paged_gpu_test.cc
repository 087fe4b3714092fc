// GPU tests of the paged copy kernels: every shape of AllShapes(), both directions, chunks
// in device memory and in mapped pinned host memory (zero-copy), with and without a CTA
// cap, against the CPU reference on fresh random data with every output poisoned first.
//
// Uses the minitest harness (no GoogleTest needed on a GPU host). Without a usable GPU it
// prints "SKIPPED: no CUDA device (...)" and exits 77 (ctest: skipped); with
// --require_gpu it fails instead. Run it under `compute-sanitizer --tool memcheck` too
// (scripts/cuda_gpu_check.sh does).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "kvstash/paged/gpu_copy.h"
#include "kvstash/paged/reference.h"
#include "tests/check.h"
#include "tests/gpu_buffers.h"
#include "tests/paged_test_util.h"

namespace kvstash::paged::testing {
namespace {

constexpr uint8_t kPoison = 0x5A;

struct Case {
  TestShape shape;
  CopyDirection dir = CopyDirection::kGather;
  bool mapped_host_chunk = false;  // chunk (and block table) in mapped pinned host memory
  int32_t max_ctas = 0;
  size_t misalign = 0;  // bytes added to the chunk pointer
  uint64_t seed = 1;

  std::string Name() const {
    return shape.Name() + (dir == CopyDirection::kGather ? " gather" : " scatter") +
           (mapped_host_chunk ? " host" : " device") + " ctas " + std::to_string(max_ctas) +
           " misalign " + std::to_string(misalign);
  }
};

// Runs one case on the GPU and with the reference; compares every output byte.
void RunCase(const Case& c) {
  std::mt19937_64 rng(c.seed);
  HostCache host(c.shape.Layout());
  host.FillRandom(rng);
  const std::vector<int32_t> ids = RandomBlockIds(rng, c.shape.blocks, c.shape.blocks - 1);
  const int32_t tokens = PartialTokens(c.shape.block_size, static_cast<int32_t>(ids.size()) - 1);
  const size_t bytes = static_cast<size_t>(ChunkBytes(host.layout(), tokens, c.shape.layers));
  const bool gather = c.dir == CopyDirection::kGather;
  std::vector<uint8_t> chunk_ref(bytes + c.misalign, kPoison);
  if (!gather) {
    const std::vector<uint8_t> r = RandomBytes(rng, bytes);
    std::memcpy(chunk_ref.data() + c.misalign, r.data(), bytes);
  }
  DeviceCache dev(host.layout());
  Status s = gather ? dev.Upload(host) : dev.Fill(kPoison);
  ChunkBuffer chunk(chunk_ref.size(), c.mapped_host_chunk);
  IdBuffer dev_ids(ids, c.mapped_host_chunk);
  if (s.ok()) s = chunk.Upload(chunk_ref);
  ASSERT_TRUE(s.ok() && chunk.ok() && dev_ids.ok()) << c.Name() << ": " << s.ToString();
  PagedCopyArgs a = ArgsFor(host.layout(), dev.layer_ptrs(), dev.v_layer_ptrs(), c.dir, ids, 1,
                            tokens, chunk.device_ptr() + c.misalign);
  a.block_ids = dev_ids.device_ptr();
  a.max_ctas = c.max_ctas;
  s = GpuPagedCopy::Run(a, nullptr);
  if (s.ok()) s = CudaStatus(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  ASSERT_TRUE(s.ok()) << c.Name() << ": " << s.ToString();

  HostCache want(host.layout());
  want.Fill(kPoison);
  PagedCopyArgs r =
      ArgsFor(gather ? host : want, c.dir, ids, 1, tokens, chunk_ref.data() + c.misalign);
  ASSERT_TRUE(ReferenceCopy(r).ok()) << c.Name();
  if (gather) {
    std::vector<uint8_t> got;
    ASSERT_TRUE(chunk.Download(&got).ok()) << c.Name();
    EXPECT_EQ(FirstDiff(got, chunk_ref), -1) << c.Name();
    return;
  }
  HostCache got(host.layout());
  ASSERT_TRUE(dev.Download(&got).ok()) << c.Name();
  for (size_t i = 0; i < got.tensors().size(); ++i) {
    EXPECT_EQ(FirstDiff(got.tensors()[i], want.tensors()[i]), -1) << c.Name() << " tensor " << i;
  }
}

TEST(GpuPagedCopyTest, MatchesReferenceEveryShape) {
  uint64_t seed = 100;
  for (const TestShape& shape : AllShapes()) {
    for (CopyDirection dir : {CopyDirection::kGather, CopyDirection::kScatter}) {
      for (bool host_chunk : {false, true}) {
        for (int32_t ctas : {0, 8, 1}) RunCase({shape, dir, host_chunk, ctas, 0, ++seed});
      }
    }
  }
}

TEST(GpuPagedCopyTest, MisalignedChunksUseNarrowerVectors) {
  uint64_t seed = 500;
  for (const TestShape& shape : AllShapes()) {
    if (shape.elem_bytes != 2) continue;
    for (CopyDirection dir : {CopyDirection::kGather, CopyDirection::kScatter}) {
      for (size_t misalign : {1, 2, 4, 8}) RunCase({shape, dir, false, 0, misalign, ++seed});
    }
  }
}

TEST(GpuPagedCopyTest, LlamaShapedAndManyLayers) {
  const TestShape llama{LayoutKind::kVllmNhd, 32, 40, 16, 8, 128, 2};
  uint64_t seed = 900;
  for (LayoutKind kind : {LayoutKind::kVllmNhd, LayoutKind::kVllmHnd, LayoutKind::kFlashInferNhd,
                          LayoutKind::kCrossLayer, LayoutKind::kSglangPool}) {
    for (CopyDirection dir : {CopyDirection::kGather, CopyDirection::kScatter}) {
      RunCase({WithKind(llama, kind), dir, false, 0, 0, ++seed});
      RunCase({WithKind(llama, kind), dir, true, 8, 0, ++seed});
    }
  }
  const TestShape many{LayoutKind::kCrossLayer, 70, 4, 4, 2, 32, 2};  // 2 launches
  RunCase({many, CopyDirection::kGather, false, 0, 0, ++seed});
  RunCase({WithKind(many, LayoutKind::kFlashInferHnd), CopyDirection::kScatter, true, 3, 0, 7});
}

TEST(GpuPagedCopyTest, RejectsBadArgumentsWithoutLaunching) {
  HostCache host(TestShape{}.Layout());
  DeviceCache dev(host.layout());
  const std::vector<int32_t> ids = {0, 1};
  IdBuffer dev_ids(ids, false);
  ChunkBuffer chunk(1 << 20, false);
  PagedCopyArgs a = ArgsFor(host.layout(), dev.layer_ptrs(), nullptr, CopyDirection::kGather, ids,
                            0, 20, chunk.device_ptr());
  a.block_ids = dev_ids.device_ptr();
  ASSERT_TRUE(GpuPagedCopy::Run(a, nullptr).ok());
  a.layout.elem_bytes = 3;
  EXPECT_EQ(GpuPagedCopy::Run(a, nullptr).code, StatusCode::kInvalidArgument);
  a.layout.elem_bytes = 2;
  a.num_tokens = 33;  // needs 3 blocks
  EXPECT_EQ(GpuPagedCopy::Run(a, nullptr).code, StatusCode::kInvalidArgument);
  EXPECT_TRUE(CudaStatus(cudaDeviceSynchronize(), "sync").ok());
}

}  // namespace
}  // namespace kvstash::paged::testing

int main(int argc, char** argv) {
  bool require_gpu = false;
  for (int i = 1; i < argc; ++i) require_gpu |= std::strcmp(argv[i], "--require_gpu") == 0;
  std::string why;
  if (kvstash::paged::CudaDeviceCount(&why) == 0) {
    std::printf("SKIPPED: no CUDA device (%s)\n", why.c_str());
    return require_gpu ? 1 : 77;
  }
  cudaDeviceProp prop{};
  if (cudaGetDeviceProperties(&prop, 0) == cudaSuccess) {
    std::printf("device 0: %s, %d SMs, sm_%d%d\n", prop.name, prop.multiProcessorCount, prop.major,
                prop.minor);
  }
  return kvstash::minitest::RunAll(argc, argv);
}
