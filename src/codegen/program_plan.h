// Compiles a single-device ir::Module into a device-independent plan: the buffers it needs
// (parameters, constants, materialized intermediates) and the GLSL compute kernels that fill them.
// Elementwise and index-mapping ops (broadcast, transpose, slice, pad, concatenate, reverse,
// reshape, dynamic-slice, dynamic-update-slice, iota, convert, select, ...) fuse into the kernel of
// their consumer; dot and reduce get kernels of their own that absorb their operands' producers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/codegen/target_info.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {

enum class BufferOrigin { kParameter, kConstant, kIntermediate };

struct BufferPlan {
  ir::Shape shape;             // An array shape.
  uint32_t element_bytes = 4;  // 4, or 1 for pred on devices with byte predicates.
  BufferOrigin origin = BufferOrigin::kIntermediate;
  int64_t parameter_number = -1;          // kParameter.
  const ir::Literal* constant = nullptr;  // kConstant; borrowed from the module.
  std::string name;                       // The instruction's name, for errors and dumps.
  // Elements per binding: a buffer larger than the device's maxStorageBufferRange is bound as
  // several consecutive ranges of this many elements (a power of two), else one range.
  uint64_t part_elements = 0;
  uint64_t byte_size() const { return element_bytes * static_cast<uint64_t>(shape.ElementCount()); }
  uint64_t element_count() const { return static_cast<uint64_t>(shape.ElementCount()); }
  // How many bindings the buffer takes (at least one).
  uint32_t parts() const {
    return element_count() <= part_elements
               ? 1
               : static_cast<uint32_t>((element_count() + part_elements - 1) / part_elements);
  }
};

struct KernelPlan {
  std::string name;
  std::string glsl;
  std::vector<int> inputs;  // Buffer ids bound at 0..n-1.
  int output = -1;          // Buffer id bound last.
  uint64_t invocations = 0;
  uint32_t local_size = 64;
  std::vector<uint32_t> push_constants;  // The sizes the kernel reads (KernelWriter::Size).
  // A collective between devices, run by the host between kernels instead of a shader (glsl is
  // empty): inputs[0] holds its operand, output receives its result.
  const ir::Instruction* collective = nullptr;
};

// Which device of the program's replicas x partitions a plan is for (replica-id, partition-id).
struct DeviceIds {
  int64_t replica = 0;
  int64_t partition = 0;
};

struct ProgramPlan {
  std::vector<BufferPlan> buffers;
  std::vector<KernelPlan> kernels;  // In execution order.
  std::vector<int> outputs;         // Buffer ids of the result (one per tuple element).
  // (output buffer, parameter buffer) pairs from the module's input_output_alias where sharing
  // one device buffer is safe: the output's kernel reads the parameter only at the element it
  // writes, and no later kernel reads the parameter. Other aliases keep separate buffers.
  std::vector<std::pair<int, int>> donations;
  bool tuple_result = false;
  DeviceIds ids;
};

// UNIMPLEMENTED naming the instruction for ops or types the device compiler does not handle yet.
absl::StatusOr<ProgramPlan> PlanProgram(const ir::Module& module, const TargetInfo& target,
                                        DeviceIds ids = {});

// The GLSL type a device buffer of `type` holds ("float", "int", "uint"); error for others.
absl::StatusOr<std::string> GlslType(ir::DType type);

}  // namespace vkspmd::codegen
