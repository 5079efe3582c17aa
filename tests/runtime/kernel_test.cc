// Kernels on mesh devices: vector add and saxpy on 8 devices driven by 8 threads at once, replay
// of recorded sequences, timestamps, kernels compiled from GLSL at run time, and the errors of
// invalid kernels and bindings. Results are checked element by element against the CPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <thread>
#include <vector>

#include "src/codegen/shader_compiler.h"
#include "src/runtime/buffer.h"
#include "src/runtime/command_sequence.h"
#include "src/runtime/transfers.h"
#include "tests/shaders/embedded_shaders.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

using runtime::BindingAccess;

constexpr uint32_t kLocalSize = 64;

struct CountPush {
  uint32_t count;
};
struct SaxpyPush {
  uint32_t count;
  float alpha;
};

std::vector<float> RandomFloats(size_t count, uint32_t seed) {
  std::mt19937 random(seed);
  std::uniform_real_distribution<float> distribution(-10.0f, 10.0f);
  std::vector<float> values(count);
  for (float& value : values) value = distribution(random);
  return values;
}

template <typename T>
absl::Status UploadVector(const std::vector<T>& values, runtime::Buffer& buffer) {
  return runtime::Upload(std::as_bytes(std::span(values)), buffer);
}

template <typename T>
absl::StatusOr<std::vector<T>> DownloadVector(const runtime::Buffer& buffer, size_t count) {
  std::vector<T> values(count);
  absl::Status status = runtime::Download(buffer, 0, std::as_writable_bytes(std::span(values)));
  if (!status.ok()) return status;
  return values;
}

// GLSL's fma() may be fused or not (llvmpipe does not fuse), so a multiply-add is compared within
// a few rounding errors of its terms' magnitude: tight, but independent of fusing.
bool MultiplyAddMatches(float got, float expected, float product_magnitude, float addend) {
  float tolerance = 4 * std::numeric_limits<float>::epsilon() *
                    (std::fabs(product_magnitude) + std::fabs(addend));
  return std::fabs(got - expected) <= tolerance;
}

uint32_t Groups(uint32_t count) { return (count + kLocalSize - 1) / kLocalSize; }

class KernelTest : public DeviceTest {};

// Vector add then saxpy, recorded once, on one device; returns the first mismatch or "".
std::string RunAddAndSaxpy(runtime::MeshDevice& mesh_device, runtime::ComputePipeline& add,
                           runtime::ComputePipeline& saxpy, uint32_t count, uint32_t seed) {
  std::vector<float> a = RandomFloats(count, seed);
  std::vector<float> b = RandomFloats(count, seed + 1);
  const float alpha = 0.75f;
  auto fail = [&](const absl::Status& status) { return std::string(status.message()); };
  absl::StatusOr<std::unique_ptr<runtime::Buffer>> a_buffer =
      runtime::Buffer::Create(mesh_device, count * 4);
  absl::StatusOr<std::unique_ptr<runtime::Buffer>> b_buffer =
      runtime::Buffer::Create(mesh_device, count * 4);
  absl::StatusOr<std::unique_ptr<runtime::Buffer>> c_buffer =
      runtime::Buffer::Create(mesh_device, count * 4);
  if (!a_buffer.ok()) return fail(a_buffer.status());
  if (!b_buffer.ok()) return fail(b_buffer.status());
  if (!c_buffer.ok()) return fail(c_buffer.status());
  if (absl::Status s = UploadVector(a, **a_buffer); !s.ok()) return fail(s);
  if (absl::Status s = UploadVector(b, **b_buffer); !s.ok()) return fail(s);

  runtime::CommandRecorder recorder(mesh_device);
  // c = a + b; then b = alpha * c + b (reads the c just written: needs a barrier).
  recorder.Dispatch(add, {{a_buffer->get()}, {b_buffer->get()}, {c_buffer->get()}},
                    CountPush{count}, {Groups(count), 1, 1});
  recorder.Dispatch(saxpy, {{c_buffer->get()}, {b_buffer->get()}}, SaxpyPush{count, alpha},
                    {Groups(count), 1, 1});
  absl::StatusOr<std::unique_ptr<runtime::CommandSequence>> sequence = recorder.Finish();
  if (!sequence.ok()) return fail(sequence.status());
  if (absl::Status s = (*sequence)->Run(); !s.ok()) return fail(s);

  absl::StatusOr<std::vector<float>> c = DownloadVector<float>(**c_buffer, count);
  absl::StatusOr<std::vector<float>> y = DownloadVector<float>(**b_buffer, count);
  if (!c.ok()) return fail(c.status());
  if (!y.ok()) return fail(y.status());
  for (uint32_t i = 0; i < count; ++i) {
    float sum = a[i] + b[i];
    float expected = std::fma(alpha, sum, b[i]);
    if ((*c)[i] != sum || !MultiplyAddMatches((*y)[i], expected, alpha * sum, b[i])) {
      return "element " + std::to_string(i) + " of " + std::to_string(count) + " on " +
             mesh_device.label() + ": got c=" + std::to_string((*c)[i]) +
             " y=" + std::to_string((*y)[i]) + ", expected c=" + std::to_string(sum) +
             " y=" + std::to_string(expected);
    }
  }
  return "";
}

TEST_F(KernelTest, VectorAddAndSaxpyOnEightDevicesFromEightThreads) {
  OpenDevices(8);
  std::vector<std::unique_ptr<runtime::ComputePipeline>> adds;
  std::vector<std::unique_ptr<runtime::ComputePipeline>> saxpys;
  for (int index = 0; index < 8; ++index) {
    adds.push_back(
        EmbeddedPipeline(device(index), "vector_add_f32",
                         {BindingAccess::kRead, BindingAccess::kRead, BindingAccess::kWrite},
                         sizeof(CountPush), kLocalSize));
    saxpys.push_back(EmbeddedPipeline(device(index), "saxpy_f32",
                                      {BindingAccess::kRead, BindingAccess::kReadWrite},
                                      sizeof(SaxpyPush), kLocalSize));
    ASSERT_TRUE(adds.back() && saxpys.back());
  }
  const std::vector<uint32_t> counts = {1, 7, 64, 65, 997, 4096, 100'003};
  std::vector<std::string> failures(8);
  std::vector<std::thread> threads;
  for (int index = 0; index < 8; ++index) {
    threads.emplace_back([&, index] {
      for (uint32_t count : counts) {
        failures[index] =
            RunAddAndSaxpy(device(index), *adds[index], *saxpys[index], count, count * 8 + index);
        if (!failures[index].empty()) return;
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const std::string& failure : failures) EXPECT_EQ(failure, "");
}

TEST_F(KernelTest, RecordedSequenceReplaysAndReportsTimings) {
  OpenDevices(1);
  auto saxpy = EmbeddedPipeline(
      device(0), "saxpy_f32", {BindingAccess::kRead, BindingAccess::kReadWrite}, sizeof(SaxpyPush));
  ASSERT_TRUE(saxpy);
  constexpr uint32_t kCount = 1000;
  std::vector<float> x = RandomFloats(kCount, 1);
  std::vector<float> y = RandomFloats(kCount, 2);
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto x_buffer, runtime::Buffer::Create(device(0), kCount * 4));
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto y_buffer, runtime::Buffer::Create(device(0), kCount * 4));
  VKSPMD_ASSERT_OK(UploadVector(x, *x_buffer));
  VKSPMD_ASSERT_OK(UploadVector(y, *y_buffer));
  runtime::CommandRecorder recorder(device(0));
  for (int step = 0; step < 3; ++step) {
    recorder.Dispatch(*saxpy, {{x_buffer.get()}, {y_buffer.get()}}, SaxpyPush{kCount, 0.5f},
                      {Groups(kCount), 1, 1});
  }
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto sequence, recorder.Finish(/*timestamps=*/true));
  EXPECT_EQ(sequence->step_count(), 3u);
  EXPECT_EQ(sequence->ReadTimings().status().code(), absl::StatusCode::kFailedPrecondition);
  constexpr int kRuns = 4;
  for (int run = 0; run < kRuns; ++run) VKSPMD_ASSERT_OK(sequence->Run());
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<float> result, DownloadVector<float>(*y_buffer, kCount));
  for (uint32_t i = 0; i < kCount; ++i) {
    // alpha = 0.5 makes every product exact, so fused or not the result is the same.
    float expected = y[i];
    for (int step = 0; step < 3 * kRuns; ++step) expected = std::fma(0.5f, x[i], expected);
    ASSERT_EQ(result[i], expected) << "element " << i;
  }
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<runtime::StepTiming> timings, sequence->ReadTimings());
  ASSERT_EQ(timings.size(), 3u);
  for (const runtime::StepTiming& timing : timings) {
    EXPECT_EQ(timing.name, "saxpy_f32");
    EXPECT_GT(timing.gpu_nanoseconds, 0);
    EXPECT_LT(timing.gpu_nanoseconds, 10e9);
  }
}

TEST_F(KernelTest, KernelCompiledFromGlslAtRunTime) {
  OpenDevices(2);
  constexpr char kGlsl[] = R"(#version 460
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) readonly buffer In { int values[]; };
layout(set = 0, binding = 1) writeonly buffer Out { int results[]; };
layout(push_constant) uniform Push { uint count; int offset; } push;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i < push.count) results[i] = values[i] * values[i] - push.offset;
}
)";
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<uint32_t> spirv,
                              codegen::CompileComputeShader(kGlsl, "square_minus"));
  struct Push {
    uint32_t count;
    int32_t offset;
  };
  runtime::PipelineSpec spec{"square_minus", spirv,
                             "main",         {BindingAccess::kRead, BindingAccess::kWrite},
                             sizeof(Push),   {}};
  constexpr uint32_t kCount = 12'345;
  std::vector<int32_t> input(kCount);
  for (uint32_t i = 0; i < kCount; ++i) input[i] = static_cast<int32_t>(i * 7919 % 46'000) - 23'000;
  for (int index = 0; index < 2; ++index) {
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto pipeline,
                                runtime::ComputePipeline::Create(device(index).device(), spec));
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto in, runtime::Buffer::Create(device(index), kCount * 4));
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto out, runtime::Buffer::Create(device(index), kCount * 4));
    VKSPMD_ASSERT_OK(UploadVector(input, *in));
    runtime::CommandRecorder recorder(device(index));
    recorder.Dispatch(*pipeline, {{in.get()}, {out.get()}}, Push{kCount, 17 + index},
                      {(kCount + 31) / 32, 1, 1});
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto sequence, recorder.Finish());
    VKSPMD_ASSERT_OK(sequence->Run());
    VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<int32_t> result, DownloadVector<int32_t>(*out, kCount));
    for (uint32_t i = 0; i < kCount; ++i) {
      ASSERT_EQ(result[i], input[i] * input[i] - (17 + index)) << "element " << i;
    }
  }
}

// Uniform texel buffers of 4-element texels: every element of inputs whose size ends inside a
// texel (the buffer's padding completes the last one), an offset range, 16- and 8-bit texels, and
// the errors of a written texel binding and of formats that do not match the bindings.
TEST_F(KernelTest, UniformTexelBufferBindingsReadEveryElement) {
  OpenDevices(1);
  constexpr char kGlsl[] = R"(#version 460
layout(local_size_x = 32) in;
layout(set = 0, binding = 0) uniform samplerBuffer floats;
layout(set = 0, binding = 1) uniform isamplerBuffer shorts;
layout(set = 0, binding = 2) uniform usamplerBuffer bytes;
layout(set = 0, binding = 3) writeonly buffer Out { float results[]; };
layout(push_constant) uniform Push { uint count; } push;
void main() {
  uint i = gl_GlobalInvocationID.x;
  if (i >= push.count) return;
  results[i] = texelFetch(floats, int(i >> 2u))[i & 3u] + float(texelFetch(shorts, int(i >> 2u))[i & 3u]) * 1000.0 +
               float(texelFetch(bytes, int(i >> 2u))[i & 3u]) * 100000.0;
}
)";
  VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<uint32_t> spirv,
                              codegen::CompileComputeShader(kGlsl, "texels"));
  runtime::PipelineSpec spec{
      "texels",
      spirv,
      "main",
      {BindingAccess::kRead, BindingAccess::kRead, BindingAccess::kRead, BindingAccess::kWrite},
      sizeof(CountPush),
      {}};
  spec.texel_formats = {VK_FORMAT_R32G32B32A32_SFLOAT, VK_FORMAT_R16G16B16A16_SINT,
                        VK_FORMAT_R8G8B8A8_UINT, VK_FORMAT_UNDEFINED};
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto pipeline,
                              runtime::ComputePipeline::Create(device(0).device(), spec));
  for (uint32_t count : {1u, 3u, 5u, 7u, 1001u}) {
    SCOPED_TRACE(count);
    // The floats are bound from 64 bytes into their buffer (or the device's texel offset
    // alignment, if larger): a view at an offset.
    const uint64_t offset = std::max<uint64_t>(
        64, device(0).device().physical_device().min_texel_buffer_offset_alignment);
    std::vector<float> floats(offset / 4 + count);
    std::vector<int16_t> shorts(count);
    std::vector<uint8_t> bytes(count);
    for (uint32_t i = 0; i < floats.size(); ++i) floats[i] = 0.25f * static_cast<float>(i) - 7;
    for (uint32_t i = 0; i < count; ++i) {
      shorts[i] = static_cast<int16_t>(static_cast<int>(i * 37 % 201) - 100);
      bytes[i] = static_cast<uint8_t>(i * 91 % 256);
    }
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto float_buffer,
                                runtime::Buffer::Create(device(0), floats.size() * 4));
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto short_buffer, runtime::Buffer::Create(device(0), count * 2));
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto byte_buffer, runtime::Buffer::Create(device(0), count));
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto out, runtime::Buffer::Create(device(0), count * 4));
    VKSPMD_ASSERT_OK(UploadVector(floats, *float_buffer));
    VKSPMD_ASSERT_OK(UploadVector(shorts, *short_buffer));
    VKSPMD_ASSERT_OK(UploadVector(bytes, *byte_buffer));
    runtime::CommandRecorder recorder(device(0));
    recorder.Dispatch(
        *pipeline,
        {{float_buffer.get(), offset}, {short_buffer.get()}, {byte_buffer.get()}, {out.get()}},
        CountPush{count}, {(count + 31) / 32, 1, 1});
    VKSPMD_ASSERT_OK_AND_ASSIGN(auto sequence, recorder.Finish());
    VKSPMD_ASSERT_OK(sequence->Run());
    VKSPMD_ASSERT_OK_AND_ASSIGN(std::vector<float> result, DownloadVector<float>(*out, count));
    for (uint32_t i = 0; i < count; ++i) {
      const float expected = floats[offset / 4 + i] + static_cast<float>(shorts[i]) * 1000.0f +
                             static_cast<float>(bytes[i]) * 100000.0f;
      ASSERT_EQ(result[i], expected) << "element " << i;
    }
  }

  runtime::PipelineSpec written = spec;
  written.bindings[0] = BindingAccess::kReadWrite;
  absl::Status status = runtime::ComputePipeline::Create(device(0).device(), written).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("binding 0 is a uniform texel buffer: read only"),
            absl::string_view::npos)
      << status;
  runtime::PipelineSpec short_list = spec;
  short_list.texel_formats.pop_back();
  status = runtime::ComputePipeline::Create(device(0).device(), short_list).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("gives 3 texel formats for 4 bindings"), absl::string_view::npos)
      << status;
}

TEST_F(KernelTest, InvalidKernelsAndBindingsAreClearErrors) {
  // Buffers belong to a VkDevice: a buffer of another mesh device is refused when that device has
  // its own (on a GPU, further mesh devices are otherwise queues of one VkDevice).
  OpenDevices(2, [](runtime::RuntimeConfig& config) { config.separate_logical_devices = true; });
  const std::vector<uint32_t> garbage = {1, 2, 3, 4, 5, 6};
  runtime::PipelineSpec spec{"garbage", garbage, "main", {BindingAccess::kRead}, 0, {}};
  absl::Status status = runtime::ComputePipeline::Create(device(0).device(), spec).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("'garbage' is not SPIR-V"), absl::string_view::npos) << status;

  auto add = EmbeddedPipeline(device(0), "vector_add_f32",
                              {BindingAccess::kRead, BindingAccess::kRead, BindingAccess::kWrite},
                              sizeof(CountPush));
  ASSERT_TRUE(add);
  spec = {"too_many_push_constants", {}, "main", {}, 4096, {}};
  absl::StatusOr<std::span<const uint32_t>> words = shaders::EmbeddedShader("vector_add_f32");
  ASSERT_TRUE(words.ok());
  spec.spirv = *words;
  status = runtime::ComputePipeline::Create(device(0).device(), spec).status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("4096 bytes of push constants"), absl::string_view::npos);

  VKSPMD_ASSERT_OK_AND_ASSIGN(auto small, runtime::Buffer::Create(device(0), 16));
  VKSPMD_ASSERT_OK_AND_ASSIGN(auto elsewhere, runtime::Buffer::Create(device(1), 16));
  auto finish_error = [&](auto record) {
    runtime::CommandRecorder recorder(device(0));
    record(recorder);
    return recorder.Finish().status();
  };
  status = finish_error([&](runtime::CommandRecorder& recorder) {
    recorder.Dispatch(*add, {{small.get()}, {small.get()}}, CountPush{4}, {1, 1, 1});
  });
  EXPECT_NE(status.message().find("has 3 bindings but 2 buffers"), absl::string_view::npos)
      << status;
  status = finish_error([&](runtime::CommandRecorder& recorder) {
    recorder.Dispatch(*add, {{small.get()}, {small.get(), 8, 16}, {small.get()}}, CountPush{4},
                      {1, 1, 1});
  });
  EXPECT_EQ(status.code(), absl::StatusCode::kOutOfRange) << status;
  status = finish_error([&](runtime::CommandRecorder& recorder) {
    recorder.Dispatch(*add, {{small.get()}, {elsewhere.get()}, {small.get()}}, CountPush{4},
                      {1, 1, 1});
  });
  EXPECT_NE(status.message().find("belongs to mesh device 1"), absl::string_view::npos) << status;
  status = finish_error([&](runtime::CommandRecorder& recorder) {
    recorder.Dispatch(*add, {{small.get()}, {small.get()}, {small.get()}}, CountPush{4},
                      {UINT32_MAX, 1, 1});
  });
  EXPECT_NE(status.message().find("workgroups along axis 0"), absl::string_view::npos) << status;
}

}  // namespace
}  // namespace vkspmd::testing
