// llvmpipe's silent loop limit (lavapipe only): a naive kernel that loops over 1M elements in one
// invocation stops after 65,535 iterations with no error, while a kernel with bounded work per
// invocation, applied in passes, sums 1M integers exactly. This canary catches kernels that
// regress to unbounded per-invocation loops.
#include <gtest/gtest.h>

#include <numeric>
#include <vector>

#include "src/runtime/buffer.h"
#include "src/runtime/command_sequence.h"
#include "src/runtime/transfers.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

using runtime::BindingAccess;

struct SumPush {
  uint32_t count;
  uint32_t chunk;
};

class LoopLimitTest : public DeviceTest {
 protected:
  void SetUp() override {
    OpenDevices(1);
    if (!is_lavapipe()) GTEST_SKIP() << "the loop limit is a lavapipe (llvmpipe) property";
    pipeline_ =
        EmbeddedPipeline(device(0), "sum_u32_chunks", {BindingAccess::kRead, BindingAccess::kWrite},
                         sizeof(SumPush), 64);
    ASSERT_TRUE(pipeline_);
    values_.resize(kCount);
    for (uint32_t i = 0; i < kCount; ++i) values_[i] = (i * 2654435761u) % 1000;
  }
  void TearDown() override {
    pipeline_.reset();
    DeviceTest::TearDown();
  }

  // Sums `values_` on the device with every invocation summing at most `chunk` elements per pass.
  absl::StatusOr<uint32_t> DeviceSum(uint32_t chunk) {
    auto input = runtime::Buffer::Create(device(0), kCount * 4);
    if (!input.ok()) return input.status();
    if (absl::Status s = runtime::Upload(std::as_bytes(std::span(values_)), **input); !s.ok())
      return s;
    std::vector<std::unique_ptr<runtime::Buffer>> buffers;
    buffers.push_back(std::move(*input));
    runtime::CommandRecorder recorder(device(0));
    for (uint32_t count = kCount; count > 1 || buffers.size() == 1;) {
      uint32_t partials = (count + chunk - 1) / chunk;
      auto output = runtime::Buffer::Create(device(0), partials * 4);
      if (!output.ok()) return output.status();
      recorder.Dispatch(*pipeline_, {{buffers.back().get()}, {output->get()}},
                        SumPush{count, chunk}, {(partials + 63) / 64, 1, 1});
      buffers.push_back(std::move(*output));
      count = partials;
    }
    auto sequence = recorder.Finish();
    if (!sequence.ok()) return sequence.status();
    if (absl::Status s = (*sequence)->Run(); !s.ok()) return s;
    uint32_t sum = 0;
    if (absl::Status s =
            runtime::Download(*buffers.back(), 0, std::as_writable_bytes(std::span(&sum, 1)));
        !s.ok()) {
      return s;
    }
    return sum;
  }

  static constexpr uint32_t kCount = 1'000'000;
  std::unique_ptr<runtime::ComputePipeline> pipeline_;
  std::vector<uint32_t> values_;
};

TEST_F(LoopLimitTest, NaiveSingleInvocationLoopIsSilentlyTruncated) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(uint32_t naive, DeviceSum(kCount));
  uint32_t limit = device(0).device().physical_device().quirks.loop_iteration_limit;
  uint32_t truncated = std::accumulate(values_.begin(), values_.begin() + limit, 0u);
  uint32_t exact = std::accumulate(values_.begin(), values_.end(), 0u);
  EXPECT_NE(naive, exact) << "llvmpipe no longer truncates long loops: revisit the quirk table";
  EXPECT_EQ(naive, truncated) << "the naive kernel stops after exactly " << limit << " iterations";
}

TEST_F(LoopLimitTest, BoundedWorkPerInvocationSumsOneMillionExactly) {
  VKSPMD_ASSERT_OK_AND_ASSIGN(uint32_t sum, DeviceSum(256));
  EXPECT_EQ(sum, std::accumulate(values_.begin(), values_.end(), 0u));
}

}  // namespace
}  // namespace vkspmd::testing
