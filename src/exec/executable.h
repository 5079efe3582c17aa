// A compiled single-device program: pipelines, buffers and one recorded command sequence for one
// mesh device. Compile once, then Run as often as needed with new arguments.
#pragma once

#include <array>
#include <memory>
#include <vector>

#include "absl/status/statusor.h"
#include "src/codegen/program_plan.h"
#include "src/exec/collective_step.h"
#include "src/exec/device_collectives.h"
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
  // ToDeviceBytes), so nothing passes through the host. A borrowed argument is copied into the
  // program's parameter buffer on the device. A donated argument (`owned`) is given up by the
  // caller: when the module aliases it to an output (input_output_alias) and updating it in place
  // is safe (see ProgramPlan::donations), the kernels bind it directly and the output is computed
  // into it, and it comes back as that result, so a training step neither copies its parameters
  // in nor its new parameters out. Other results get buffers of their own. Donated buffers are
  // lost when the run fails (they may have been partly updated).
  struct DeviceArgument {
    const runtime::Buffer* borrowed = nullptr;
    std::unique_ptr<runtime::Buffer> owned;
  };
  absl::StatusOr<std::vector<std::unique_ptr<runtime::Buffer>>> RunOnDevice(
      std::vector<DeviceArgument> arguments);
  absl::StatusOr<std::vector<std::unique_ptr<runtime::Buffer>>> RunOnDevice(
      const std::vector<const runtime::Buffer*>& arguments);

  // Whether RunOnDevice would accept these argument buffers (count, sizes, device).
  absl::Status CheckDeviceArguments(const std::vector<const runtime::Buffer*>& arguments) const;

  // Times the commands were recorded: once at compile time, and once more for every new set of
  // donated buffers (a loop that feeds its results back in records once).
  int recording_count() const { return recording_count_; }
  size_t kernel_count() const { return plan_.kernels.size(); }
  // Device buffers actually allocated: intermediates whose lifetimes do not overlap share one.
  size_t device_buffer_count() const { return buffers_.size(); }
  const codegen::ProgramPlan& plan() const { return plan_; }
  // GPU time of each kernel of the last run (compiled with timestamps).
  absl::StatusOr<std::vector<runtime::StepTiming>> Timings() const;
  // Wall seconds the last run spent in collectives (waiting for peers, moving data through the
  // host), for splitting a step's time into kernels, collectives and the rest.
  double last_collective_seconds() const { return collective_seconds_; }
  // Times the last run's host waited for this device's work: once per segment whose collective
  // the host runs, plus the end of the run (device-side collectives wait for none).
  int last_host_waits() const { return host_waits_; }
  // Collectives that run on the device (VKSPMD_DEVICE_COLLECTIVES), of collective_count.
  size_t device_collective_count() const;
  // Segments of kernels (each but the last ended by a collective or a bucket of all-reduces).
  size_t segment_count() const { return segments_.size(); }
  // Collectives per run, a bucket of all-reduces counting once (the devices meet that often).
  int64_t collective_run_count() const { return collective_count_; }
  // Where the flow ids of the next traced run's collectives start (see MeshExecutable): ids
  // flow_base + segment * world + device join the devices of one collective in the trace.
  void set_trace_flow_base(uint64_t flow_base) { trace_flow_base_ = flow_base; }

 private:
  Executable(runtime::MeshDevice& device, codegen::ProgramPlan plan)
      : device_(device), plan_(std::move(plan)) {}

  absl::Status AllocateBuffers();
  // Records every segment's kernels with `physical[i]` standing for buffers_[i].
  absl::Status Record(const std::vector<runtime::Buffer*>& physical,
                      std::vector<std::unique_ptr<runtime::CommandSequence>>& sequences,
                      bool timestamps);
  struct Recording;
  using Sequences = std::vector<std::unique_ptr<runtime::CommandSequence>>;
  // The recording's sequences for this run: with timestamp queries when the run is traced,
  // recorded the first time one is (an untraced run has no query in its command buffers).
  absl::StatusOr<const Sequences*> SequencesFor(Recording& recording,
                                                const std::vector<runtime::Buffer*>& physical,
                                                bool traced);
  // Kernels and collectives, after the parameters are in place.
  absl::Status RunSegments(const Sequences& sequences,
                           const std::vector<runtime::Buffer*>& physical, bool traced);
  // Segment `s`'s collective through the communicator, once its kernels are done
  // (executable_collectives.cc): a bucket's members packed into one all-reduce.
  absl::Status RunHostCollective(size_t s, const std::vector<runtime::Buffer*>& physical,
                                 bool traced);
  // Whether collective kernel `k` (planned as `step`) joins the bucket of the collective that
  // ends the previous segment, which it then does: no kernel runs between them, CanShareBucket
  // allows it, and it reads no member's result.
  bool JoinBucket(int k, const CollectiveStep& step);
  // The profiler's spans of a traced run: segment `s`'s kernels, from its timestamps placed
  // within [submitted_us, finished_us], the host times around its submission; a collective.
  void TraceKernels(size_t s, const runtime::CommandSequence& sequence, double submitted_us,
                    double finished_us) const;
  void TraceCollective(size_t s, double start_us, double end_us, uint64_t input_bytes,
                       uint64_t output_bytes) const;
  // A counter of the device's memory in use, after a traced run.
  void TraceMemory() const;
  runtime::Buffer* buffer(int plan_buffer) const {
    return buffers_[physical_of_[plan_buffer]].get();
  }
  std::vector<runtime::Buffer*> OwnPhysicalBuffers() const;

  runtime::MeshDevice& device_;
  codegen::ProgramPlan plan_;
  bool timestamps_ = false;
  int64_t dispatch_count_ = 0;    // Compute kernels per run.
  int64_t collective_count_ = 0;  // Collectives per run (a bucket counts once).
  std::vector<int> physical_of_;  // Plan buffer id → index into buffers_.
  std::vector<ir::Shape> parameter_shapes_;
  std::vector<std::unique_ptr<runtime::Buffer>> buffers_;
  // One dispatch: a kernel of plan_.kernels with its pipeline (shared on the device) and its
  // bindings as (plan buffer id, offset, size).
  struct Dispatch {
    int kernel = 0;
    std::shared_ptr<const runtime::ComputePipeline> pipeline;
    struct Binding {
      int buffer = 0;
      uint64_t offset = 0;
      uint64_t size = VK_WHOLE_SIZE;
    };
    std::vector<Binding> bindings;
    std::array<uint32_t, 3> workgroups{};
  };
  // Kernels, each segment followed by a collective the host runs (or none: the last).
  struct Segment {
    std::vector<Dispatch> dispatches;
    int collective = -1;  // Index into plan_.kernels.
    CollectiveStep step;  // When collective >= 0.
    // The collective's bucket: `collective` first, then the all-reduces that run with it.
    std::vector<BucketMember> members;
    uint64_t packed_bytes() const {
      return members.empty() ? 0 : members.back().offset + members.back().bytes;
    }
    // Set where the collective runs on the devices: this segment's commands end by copying its
    // input to the exchange buffer, the next segment's begin with the collective.
    std::optional<DeviceCollectivePlan> on_device;
  };
  std::vector<Segment> segments_;
  // Per segment, where its collective's input is not cheap for the host to read in place (a
  // GPU's uncached BAR memory, or unmapped memory): a host-cached staging buffer the segment's
  // command sequence copies the input into, so the communicator reads it without another
  // submission and wait. Null elsewhere.
  std::vector<std::unique_ptr<runtime::Buffer>> collective_staging_;
  std::vector<std::byte> bucket_scratch_;  // Where the host packs a bucket's mapped inputs.
  bool bucket_all_reduces_ = true;         // VKSPMD_ALL_REDUCE_BUCKETS (default 1).
  // Recorded command sequences, one per segment (null when it has no kernels): with the
  // executable's own buffers, and with the donated buffers of the latest runs that had some.
  struct Recording {
    std::vector<uint64_t> donated_serials;
    Sequences sequences;
    Sequences traced_sequences;  // With timestamps; empty until a traced run needs them.
  };
  Recording own_recording_;
  std::vector<std::unique_ptr<Recording>> donated_recordings_;  // Most recent first.
  const Recording* last_recording_ = &own_recording_;
  int recording_count_ = 0;
  DeviceAssignment assignment_;
  double collective_seconds_ = 0;
  int host_waits_ = 0;
  int rank_ = 0;  // Global device id: replica * partition_count + partition.
  uint64_t trace_flow_base_ = 0;
};

// A literal as the device stores it (pred as one byte or a 4-byte 0/1, everything else as is),
// and back.
std::vector<std::byte> ToDeviceBytes(const ir::Literal& literal, uint32_t element_bytes);
ir::Literal FromDeviceBytes(const ir::Shape& shape, uint32_t element_bytes,
                            const std::vector<std::byte>& bytes);
// Bytes per element of `type` in buffers of `device`.
uint32_t DeviceElementBytes(ir::DType type, const runtime::MeshDevice& device);

// Test-only (docs/codegen.md): VKSPMD_TEST_PERTURB_KERNELS makes the results read back to the
// host (Executable::Run, LoopProgram's Run and RunPerDevice) deliberately wrong, so a test can
// see a comparison against the reference fail: "1" adds a relative error of 1e-3 (plus 1e-3) to
// every float element, "nan" makes the first float element of each result NaN. Unset, empty or
// "0": nothing.
absl::Status PerturbForTests(std::vector<ir::Literal>& results);

// The device facts code generation needs, from the runtime's snapshot. VKSPMD_DOT_KERNEL=
// registers|shared_memory forces that kernel for every dot (no cooperative matrices);
// cooperative_matrix requires them for f16 dots (CheckDotKernelOverride).
codegen::TargetInfo TargetFor(const runtime::MeshDevice& device);
// FAILED_PRECONDITION for VKSPMD_DOT_KERNEL=cooperative_matrix on a device without a usable
// cooperative-matrix shape; INVALID_ARGUMENT for an unknown value.
absl::Status CheckDotKernelOverride(const codegen::TargetInfo& target,
                                    const runtime::MeshDevice& device);

}  // namespace vkspmd::exec
