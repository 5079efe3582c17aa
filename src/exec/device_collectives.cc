// Device-side collectives among queues of one VkDevice: the plan, the exchange buffers, the
// combine kernel, and the rendezvous of timeline values.
#include "src/exec/device_collectives.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/codegen/shader_compiler.h"
#include "src/collectives/chunk_layout.h"
#include "src/collectives/host_reduce.h"
#include "src/runtime/memory_allocator.h"

namespace vkspmd::exec {
namespace {

using collectives::ElementType;
using collectives::ReduceOp;
using ir::Opcode;

constexpr uint32_t kLocalSize = 64;

const char* GlslType(ElementType type) {
  switch (type) {
    case ElementType::kF32:
      return "float";
    case ElementType::kS32:
      return "int";
    default:
      return "uint";
  }
}

// combine(a, b) as collectives/host_reduce.cc computes it: float min/max propagate NaN and
// order -0 below +0 (XLA); integer sums and products wrap (GLSL's do).
std::string CombineFunction(ElementType type, ReduceOp op) {
  const std::string t = GlslType(type);
  std::string body;
  const bool is_float = type == ElementType::kF32;
  switch (op) {
    case ReduceOp::kSum:
      body = "return a + b;";
      break;
    case ReduceOp::kProduct:
      body = "return a * b;";
      break;
    case ReduceOp::kAnd:
      body = "return a & b;";
      break;
    case ReduceOp::kOr:
      body = "return a | b;";
      break;
    case ReduceOp::kMax:
    case ReduceOp::kMin: {
      const bool max = op == ReduceOp::kMax;
      if (!is_float) {
        body = max ? "return max(a, b);" : "return min(a, b);";
        break;
      }
      // Equal values differ only in sign for zeros: max takes the positive, min the negative.
      body = absl::StrCat(
          "if (isnan(a) || isnan(b)) return uintBitsToFloat(0x7fc00000u);\n"
          "  if (a == b) return (floatBitsToUint(a) >> 31) != 0u ? ",
          max ? "b : a;\n" : "a : b;\n", "  return a ", max ? ">" : "<", " b ? a : b;");
      break;
    }
  }
  return absl::StrCat(t, " combine(", t, " a, ", t, " b) {\n  ", body, "\n}\n");
}

// out[i] = in_0[base + i] combined with in_1[base + i], ... in order, for i < count.
// `preserve_denormals`: the DenormPreserve mode for f32, as KernelWriter declares it, so sums of
// subnormals equal the host path's.
std::string CombineKernel(ElementType type, ReduceOp op, size_t inputs, bool preserve_denormals) {
  const std::string t = GlslType(type);
  std::string glsl =
      absl::StrCat("#version 460\n",
                   preserve_denormals ? "#extension GL_EXT_spirv_intrinsics : require\n"
                                        "spirv_execution_mode(capabilities = [4464], 4459, 32);\n"
                                      : "",
                   "layout(local_size_x = ", kLocalSize, ") in;\n");
  for (size_t m = 0; m < inputs; ++m) {
    absl::StrAppend(&glsl, "layout(std430, set = 0, binding = ", m, ") readonly buffer In", m,
                    " { ", t, " d[]; } in", m, ";\n");
  }
  absl::StrAppend(
      &glsl, "layout(std430, set = 0, binding = ", inputs, ") writeonly buffer Out { ", t,
      " d[]; } result;\n", "layout(push_constant) uniform Push { uint count; uint base; } p;\n",
      CombineFunction(type, op), "void main() {\n",
      "  uint i = gl_GlobalInvocationID.x + gl_GlobalInvocationID.y * "
      "gl_NumWorkGroups.x * ",
      kLocalSize, "u;\n  if (i >= p.count) return;\n  precise ", t, " acc = in0.d[p.base + i];\n");
  for (size_t m = 1; m < inputs; ++m) {
    absl::StrAppend(&glsl, "  acc = combine(acc, in", m, ".d[p.base + i]);\n");
  }
  absl::StrAppend(&glsl, "  result.d[i] = acc;\n}\n");
  return glsl;
}

bool SameVkDevice(const std::vector<runtime::MeshDevice*>& devices, const std::vector<int>& ranks,
                  int me) {
  for (int rank : ranks) {
    if (rank < 0 || rank >= static_cast<int>(devices.size()) || devices[rank] == nullptr ||
        devices[rank]->handle() != devices[me]->handle()) {
      return false;
    }
  }
  return true;
}

}  // namespace

absl::StatusOr<std::unique_ptr<DeviceCollectives>> DeviceCollectives::FromEnvironment(
    const std::vector<runtime::MeshDevice*>& devices) {
  // On by default since the H100 run of 2026-11-26 (every device test of exec, lazy and cli
  // passed with it, and the 2x2 step went from 20.6 to 14.2 ms); "0" keeps the host path.
  bool enabled = true;
  if (const std::optional<std::string> value = base::EnvironmentValue("VKSPMD_DEVICE_COLLECTIVES");
      value.has_value() && !value->empty()) {
    VKSPMD_ASSIGN_OR_RETURN(enabled, base::BoolFromEnvironment("VKSPMD_DEVICE_COLLECTIVES"));
  }
  if (!enabled) return nullptr;
  for (runtime::MeshDevice* device : devices) {
    if (device == nullptr) return nullptr;  // Other processes' ranks: the host path.
  }
  // Only mesh devices on one VkDevice exchange on the device (lavapipe's are separate VkDevices
  // unless VKSPMD_SHARED_QUEUES=1): with none, nothing is planned and nothing is allocated.
  bool any_shared = false;
  for (size_t a = 0; a < devices.size() && !any_shared; ++a) {
    for (size_t b = a + 1; b < devices.size(); ++b) {
      if (devices[a]->handle() == devices[b]->handle()) {
        any_shared = true;
        break;
      }
    }
  }
  if (!any_shared) return nullptr;
  std::chrono::milliseconds timeout(60'000);
  VKSPMD_ASSIGN_OR_RETURN(
      std::optional<double> seconds,
      base::NumberFromEnvironment("VKSPMD_COLLECTIVE_TIMEOUT_S", 0.001, 1e6, "seconds"));
  if (seconds) timeout = std::chrono::milliseconds(static_cast<int64_t>(*seconds * 1000));
  return std::make_unique<DeviceCollectives>(devices, timeout);
}

DeviceCollectives::DeviceCollectives(std::vector<runtime::MeshDevice*> devices,
                                     std::chrono::milliseconds timeout)
    : devices_(std::move(devices)), timeout_(timeout) {}

std::optional<DeviceCollectivePlan> DeviceCollectives::Plan(const CollectiveStep& step, int me,
                                                            uint64_t input_bytes,
                                                            uint64_t output_bytes) const {
  const ir::Instruction& collective = *step.collective;
  const Opcode opcode = collective.opcode();
  DeviceCollectivePlan plan;
  const int world = static_cast<int>(devices_.size());
  if (opcode == Opcode::kCollectivePermute) {
    // Every rank takes part (targets without a source write zeros), so the world decides.
    for (int rank = 0; rank < world; ++rank) plan.members.push_back(rank);
    plan.position = me;
    for (auto [source, target] : step.pairs) {
      if (target == me) plan.source = source;
    }
  } else {
    for (const std::vector<int>& group : step.groups) {
      auto found = std::find(group.begin(), group.end(), me);
      if (found == group.end()) continue;
      plan.members = group;
      plan.position = static_cast<int>(found - group.begin());
    }
    if (step.groups.empty()) {  // One group of every rank.
      for (int rank = 0; rank < world; ++rank) plan.members.push_back(rank);
      plan.position = me;
    }
  }
  if (plan.members.empty() || !SameVkDevice(devices_, plan.members, me)) return std::nullopt;
  const runtime::PhysicalDeviceInfo& info = devices_[me]->device().physical_device();
  const std::vector<int64_t>& operand_dims = collective.operand(0)->shape().dimensions();
  const std::vector<int64_t>& result_dims = collective.shape().dimensions();
  switch (opcode) {
    case Opcode::kAllReduce:
    case Opcode::kReduceScatter: {
      const bool four_byte = step.element_bytes == 4 &&
                             (step.type == ElementType::kF32 || step.type == ElementType::kS32 ||
                              step.type == ElementType::kU32);
      if (!four_byte || !collectives::ReductionApplies(step.type, step.op)) return std::nullopt;
      if (opcode == Opcode::kReduceScatter &&
          !collectives::ChunksAreContiguous(operand_dims, step.dim)) {
        return std::nullopt;
      }
      if (plan.members.size() + 1 > info.max_storage_buffers_per_stage ||
          std::max(input_bytes, output_bytes) > info.max_storage_buffer_range) {
        return std::nullopt;
      }
      plan.waits_for = plan.members;
      break;
    }
    case Opcode::kAllGather:
      if (!collectives::ChunksAreContiguous(result_dims, step.dim)) return std::nullopt;
      plan.waits_for = plan.members;
      break;
    case Opcode::kAllToAll:
      if (!collectives::ChunksAreContiguous(operand_dims, step.dim)) return std::nullopt;
      plan.waits_for = plan.members;
      break;
    case Opcode::kCollectivePermute:
      plan.waits_for = {me};
      if (plan.source >= 0 && plan.source != me) plan.waits_for.push_back(plan.source);
      break;
    default:
      return std::nullopt;
  }
  return plan;
}

absl::StatusOr<runtime::Buffer*> DeviceCollectives::Exchange(size_t collective, int member,
                                                             uint64_t bytes) {
  std::lock_guard<std::mutex> lock(buffers_mutex_);
  std::unique_ptr<runtime::Buffer>& buffer = exchange_[{collective, member}];
  if (buffer == nullptr) {
    runtime::ScopedMemoryTag tag(runtime::MemoryTag::kActivation);
    VKSPMD_ASSIGN_OR_RETURN(
        buffer, runtime::Buffer::Create(*devices_[member], std::max<uint64_t>(bytes, 4)));
  }
  return buffer.get();
}

absl::StatusOr<std::shared_ptr<const runtime::ComputePipeline>> DeviceCollectives::CombinePipeline(
    runtime::MeshDevice& device, ElementType type, ReduceOp op, size_t inputs) {
  const std::string glsl =
      CombineKernel(type, op, inputs, device.device().physical_device().denorm_preserve_float32);
  const std::string name = absl::StrCat("device_combine_", collectives::ElementTypeName(type), "_",
                                        collectives::ReduceOpName(op), "_x", inputs);
  return device.device().SharedPipeline(
      glsl, [&]() -> absl::StatusOr<std::unique_ptr<runtime::ComputePipeline>> {
        VKSPMD_ASSIGN_OR_RETURN(std::vector<uint32_t> spirv,
                                codegen::CompileComputeShader(glsl, name));
        runtime::PipelineSpec spec;
        spec.name = name;
        spec.spirv = spirv;
        spec.bindings.assign(inputs, runtime::BindingAccess::kRead);
        spec.bindings.push_back(runtime::BindingAccess::kWrite);
        spec.push_constant_bytes = 8;
        return runtime::ComputePipeline::Create(device.device(), spec);
      });
}

absl::Status DeviceCollectives::Record(runtime::CommandRecorder& recorder, size_t collective,
                                       const CollectiveStep& step, int me,
                                       const DeviceCollectivePlan& plan,
                                       const runtime::Buffer& output, uint64_t input_bytes,
                                       uint64_t output_bytes, uint64_t exchange_offset) {
  std::vector<runtime::Buffer*> inputs;
  for (int member : plan.members) {
    if (step.collective->opcode() == Opcode::kCollectivePermute && member != plan.source) {
      inputs.push_back(nullptr);
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(runtime::Buffer * exchange, Exchange(collective, member, input_bytes));
    inputs.push_back(exchange);
  }
  const size_t n = plan.members.size();
  switch (step.collective->opcode()) {
    case Opcode::kAllReduce:
    case Opcode::kReduceScatter: {
      const uint32_t count = static_cast<uint32_t>(output_bytes / 4);
      if (count == 0) return absl::OkStatus();
      VKSPMD_ASSIGN_OR_RETURN(std::shared_ptr<const runtime::ComputePipeline> pipeline,
                              CombinePipeline(*devices_[me], step.type, step.op, n));
      const uint32_t base = step.collective->opcode() == Opcode::kReduceScatter
                                ? count * plan.position
                                : static_cast<uint32_t>(exchange_offset / 4);
      std::vector<runtime::BufferRange> bindings;
      for (runtime::Buffer* input : inputs) bindings.push_back({input});
      bindings.push_back({&output, 0, output_bytes});
      const uint32_t push[2] = {count, base};
      const uint64_t groups = (count + kLocalSize - 1) / kLocalSize;
      const uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(
          groups, devices_[me]->device().physical_device().max_workgroup_count[0]));
      const uint32_t y = static_cast<uint32_t>((groups + x - 1) / x);
      recorder.Dispatch(*pipeline, std::move(bindings), std::as_bytes(std::span(push)), {x, y, 1},
                        absl::StrCat("device ", step.collective->name()));
      return absl::OkStatus();
    }
    case Opcode::kAllGather:
      for (size_t m = 0; m < n && input_bytes > 0; ++m) {
        recorder.Copy(*inputs[m], 0, output, m * input_bytes, input_bytes);
      }
      return absl::OkStatus();
    case Opcode::kAllToAll: {
      const uint64_t chunk = output_bytes / n;
      for (size_t m = 0; m < n && chunk > 0; ++m) {
        recorder.Copy(*inputs[m], plan.position * chunk, output, m * chunk, chunk);
      }
      return absl::OkStatus();
    }
    default:  // Collective-permute (Plan admits nothing else).
      if (output_bytes == 0) return absl::OkStatus();
      if (plan.source < 0) {
        recorder.Fill(output, 0, VK_WHOLE_SIZE, 0);
      } else {
        recorder.Copy(*inputs[plan.source], 0, output, 0, output_bytes);
      }
      return absl::OkStatus();
  }
}

absl::StatusOr<std::vector<runtime::SemaphoreWait>> DeviceCollectives::Meet(
    size_t collective, int me, const DeviceCollectivePlan& plan, runtime::SemaphoreWait mine) {
  std::unique_lock<std::mutex> lock(mutex_);
  std::vector<std::optional<runtime::SemaphoreWait>>& slot = slots_[collective];
  slot.resize(devices_.size());
  slot[me] = mine;
  published_.notify_all();
  const auto ready = [&] {
    if (!aborted_.ok()) return true;
    for (int rank : plan.waits_for) {
      if (!slot[rank].has_value()) return false;
    }
    return true;
  };
  if (!published_.wait_for(lock, timeout_, ready)) {
    std::vector<int> missing;
    for (int rank : plan.waits_for) {
      if (!slot[rank].has_value()) missing.push_back(rank);
    }
    return absl::AbortedError(absl::StrCat("device-side collective ", collective, ": rank(s) ",
                                           absl::StrJoin(missing, ","), " did not reach it within ",
                                           timeout_.count(), " ms (VKSPMD_COLLECTIVE_TIMEOUT_S)"));
  }
  if (!aborted_.ok()) return aborted_;
  std::vector<runtime::SemaphoreWait> waits;
  for (int rank : plan.waits_for) waits.push_back(*slot[rank]);
  return waits;
}

void DeviceCollectives::Abort(const absl::Status& status) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (aborted_.ok()) aborted_ = absl::AbortedError(status.message());
  published_.notify_all();
}

void DeviceCollectives::Reset() {
  std::lock_guard<std::mutex> lock(mutex_);
  slots_.clear();
  aborted_ = absl::OkStatus();
}

}  // namespace vkspmd::exec
