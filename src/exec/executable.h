// A compiled single-device program: pipelines, buffers and one recorded command sequence for one
// mesh device. Compile once, then Run as often as needed with new arguments.
#pragma once

#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/codegen/program_plan.h"
#include "src/exec/collective_step.h"
#include "src/ir/literal.h"
#include "src/ir/module.h"
#include "src/runtime/buffer.h"
#include "src/runtime/command_sequence.h"
#include "src/runtime/mesh_device.h"
#include "src/runtime/pipeline.h"

namespace vkspmd::exec {

class Executable {
 public:
  // Plans, generates, compiles and validates every kernel, allocates the buffers, uploads the
  // constants and records the work. `device` is borrowed and must outlive the executable.
  // A module with collectives needs `assignment` (this device's replica and partition ids and
  // its communicator); partition-id and replica-id read the ids.
  static absl::StatusOr<std::unique_ptr<Executable>> Compile(const ir::Module& module,
                                                             runtime::MeshDevice& device,
                                                             bool timestamps = false,
                                                             DeviceAssignment assignment = {});

  // Uploads `arguments` (shapes must equal the entry's parameters), runs, and returns the result
  // (a tuple literal when the entry's root is a tuple).
  absl::StatusOr<ir::Literal> Run(const std::vector<ir::Literal>& arguments);

  // The same with arguments and results in device memory (as the device stores them, see
  // ToDeviceBytes): each argument is copied into the program's parameter buffer on the device and
  // each result into a new buffer, so nothing passes through the host.
  absl::StatusOr<std::vector<std::unique_ptr<runtime::Buffer>>> RunOnDevice(
      const std::vector<const runtime::Buffer*>& arguments);

  size_t kernel_count() const { return plan_.kernels.size(); }
  // Device buffers actually allocated: intermediates whose lifetimes do not overlap share one.
  size_t device_buffer_count() const { return buffers_.size(); }
  const codegen::ProgramPlan& plan() const { return plan_; }
  // GPU time of each kernel of the last run (compiled with timestamps).
  absl::StatusOr<std::vector<runtime::StepTiming>> Timings() const;
  // Wall seconds the last run spent in collectives (waiting for peers, moving data through the
  // host), for splitting a step's time into kernels, collectives and the rest.
  double last_collective_seconds() const { return collective_seconds_; }

 private:
  Executable(runtime::MeshDevice& device, codegen::ProgramPlan plan)
      : device_(device), plan_(std::move(plan)) {}

  absl::Status AllocateBuffers();
  absl::Status RunSegments();  // Kernels and collectives, after the parameters are in place.
  runtime::Buffer* buffer(int plan_buffer) const {
    return buffers_[physical_of_[plan_buffer]].get();
  }

  runtime::MeshDevice& device_;
  codegen::ProgramPlan plan_;
  std::vector<int> physical_of_;  // Plan buffer id → index into buffers_.
  std::vector<ir::Shape> parameter_shapes_;
  std::vector<std::shared_ptr<const runtime::ComputePipeline>> pipelines_;  // Device-shared.
  std::vector<std::unique_ptr<runtime::Buffer>> buffers_;
  // Recorded kernels, each segment followed by a collective the host runs (or none: the last).
  struct Segment {
    std::unique_ptr<runtime::CommandSequence> sequence;  // Null when no kernel precedes.
    int collective = -1;                                 // Index into plan_.kernels.
    CollectiveStep step;                                 // When collective >= 0.
  };
  std::vector<Segment> segments_;
  DeviceAssignment assignment_;
  double collective_seconds_ = 0;
};

// A literal as the device stores it (pred as one byte or a 4-byte 0/1, everything else as is),
// and back.
std::vector<std::byte> ToDeviceBytes(const ir::Literal& literal, uint32_t element_bytes);
ir::Literal FromDeviceBytes(const ir::Shape& shape, uint32_t element_bytes,
                            const std::vector<std::byte>& bytes);
// Bytes per element of `type` in buffers of `device`.
uint32_t DeviceElementBytes(ir::DType type, const runtime::MeshDevice& device);

// The device facts code generation needs, from the runtime's snapshot.
codegen::TargetInfo TargetFor(const runtime::MeshDevice& device);

}  // namespace vkspmd::exec
