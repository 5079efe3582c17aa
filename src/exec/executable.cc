// Compiling a plan into pipelines and recorded commands; moving literals in and out.
#include "src/exec/executable.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <limits>
#include <map>
#include <mutex>
#include <optional>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "src/base/environment.h"
#include "src/base/status_macros.h"
#include "src/codegen/shader_compiler.h"
#include "src/debug/metrics.h"
#include "src/debug/trace_writer.h"
#include "src/exec/compile_cache.h"
#include "src/exec/program_dump.h"
#include "src/runtime/transfers.h"

namespace vkspmd::exec {
namespace {

// The GLSL without its whole-line comments, which name the instructions each function computes:
// kernels that differ only there (the pieces of a long chain split into equal kernels, the same
// layer repeated) compile to the same SPIR-V and share one pipeline.
std::string WithoutCommentLines(const std::string& glsl) {
  std::string code;
  code.reserve(glsl.size());
  for (absl::string_view line : absl::StrSplit(glsl, '\n')) {
    if (absl::StartsWith(absl::StripLeadingAsciiWhitespace(line), "//")) continue;
    absl::StrAppend(&code, line, "\n");
  }
  return code;
}

// Copies between two buffers of one device whose work is finished (runs are synchronous). Where
// both are mapped host memory (lavapipe) a memcpy: a queue submission and fence wait per copy
// cost tens of microseconds, and a training step copies hundreds of arguments and results.
absl::Status CopyFinished(const runtime::Buffer& source, runtime::Buffer& destination,
                          uint64_t size) {
  if (runtime::HostReadable(source, size) && destination.mapped() != nullptr) {
    std::memcpy(destination.mapped(), source.mapped(), size);
    return absl::OkStatus();
  }
  return runtime::CopyWithinDevice(source, 0, destination, 0, size);
}

double SecondsSince(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// Generated kernels by GLSL source: a shape sweep or a recompiled module reuses them, and a new
// process finds them in the persistent compile cache rather than running glslang again.
absl::StatusOr<std::vector<uint32_t>> CompileCached(const std::string& glsl,
                                                    const std::string& name) {
  static std::mutex mutex;
  static auto* cache = new std::map<std::string, std::vector<uint32_t>>();
  std::string code = WithoutCommentLines(glsl);
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (auto found = cache->find(code); found != cache->end()) return found->second;
  }
  absl::StatusOr<std::vector<uint32_t>> spirv = CachedSpirv(code, name, [&] {
    debug::ScopedTraceSpan span("shader compile (glslang, spirv-val)");
    span.AddArg("kernel", name);
    const auto start = std::chrono::steady_clock::now();
    absl::StatusOr<std::vector<uint32_t>> compiled = codegen::CompileComputeShader(glsl, name);
    debug::RecordShaderCompile(SecondsSince(start));
    return compiled;
  });
  if (!spirv.ok()) return spirv.status();
  std::lock_guard<std::mutex> lock(mutex);
  (*cache)[std::move(code)] = *spirv;
  return spirv;
}

}  // namespace

absl::Status PerturbForTests(std::vector<ir::Literal>& results) {
  constexpr char kVariable[] = "VKSPMD_TEST_PERTURB_KERNELS";
  const std::optional<std::string> setting = base::EnvironmentValue(kVariable);
  if (!setting.has_value() || setting->empty() || *setting == "0") return absl::OkStatus();
  if (*setting != "1" && *setting != "nan") {
    return absl::InvalidArgumentError(
        absl::StrCat(kVariable, "=", *setting, ": expected 0, 1 or nan (a test-only knob)"));
  }
  for (ir::Literal& result : results) {
    if (!ir::IsFloat(result.shape().dtype()) || result.ElementCount() == 0) continue;
    if (*setting == "nan") {
      result.SetFromDouble(0, std::numeric_limits<double>::quiet_NaN());
      continue;
    }
    for (int64_t i = 0; i < result.ElementCount(); ++i) {
      result.SetFromDouble(i, result.GetAsDouble(i) * (1 + 1e-3) + 1e-3);
    }
  }
  return absl::OkStatus();
}

// A literal as the device stores it: 4 bytes per element, or 1 for byte predicates (0 or 1).
std::vector<std::byte> ToDeviceBytes(const ir::Literal& literal, uint32_t element_bytes) {
  std::vector<std::byte> bytes(literal.ElementCount() * element_bytes);
  if (literal.dtype() == ir::DType::kPred) {
    for (int64_t i = 0; i < literal.ElementCount(); ++i) {
      uint32_t value = literal.GetAsUint64(i) != 0;
      std::memcpy(bytes.data() + i * element_bytes, &value, element_bytes);  // Little-endian.
    }
  } else if (!bytes.empty()) {
    std::memcpy(bytes.data(), literal.bytes().data(), bytes.size());
  }
  return bytes;
}

ir::Literal FromDeviceBytes(const ir::Shape& shape, uint32_t element_bytes,
                            const std::vector<std::byte>& bytes) {
  ir::Literal literal(shape);
  if (shape.dtype() == ir::DType::kPred) {
    for (int64_t i = 0; i < literal.ElementCount(); ++i) {
      uint32_t value = 0;
      std::memcpy(&value, bytes.data() + i * element_bytes, element_bytes);
      literal.SetFromUint64(i, value != 0);
    }
  } else if (!bytes.empty()) {
    std::memcpy(literal.bytes().data(), bytes.data(), bytes.size());
  }
  return literal;
}

uint32_t DeviceElementBytes(ir::DType type, const runtime::MeshDevice& device) {
  if (type == ir::DType::kPred) return TargetFor(device).byte_predicates ? 1 : 4;
  return static_cast<uint32_t>(ir::DTypeByteSize(type));
}

namespace {

// VKSPMD_MASKED_PART_INVOCATIONS: unset or empty nullopt, else a count of invocations (0: no
// limit); anything else INVALID_ARGUMENT naming it and the value.
absl::StatusOr<std::optional<int64_t>> MaskedPartInvocationsOverride() {
  return base::IntegerFromEnvironment("VKSPMD_MASKED_PART_INVOCATIONS", 0,
                                      std::numeric_limits<uint32_t>::max(), "invocations");
}

// The VkFormat of a texel-read binding (codegen's TexelFormat; runtime::kTexelReadFormats).
VkFormat TexelVkFormat(codegen::TexelFormat format) {
  switch (format) {
    case codegen::TexelFormat::kFloat32:
      return VK_FORMAT_R32G32B32A32_UINT;  // Read as bits: a float format may flush or quiet.
    case codegen::TexelFormat::kInt32:
      return VK_FORMAT_R32G32B32A32_SINT;
    case codegen::TexelFormat::kUint32:
      return VK_FORMAT_R32G32B32A32_UINT;
    case codegen::TexelFormat::kInt16:
      return VK_FORMAT_R16G16B16A16_SINT;
    case codegen::TexelFormat::kUint16:
      return VK_FORMAT_R16G16B16A16_UINT;
    case codegen::TexelFormat::kInt8:
      return VK_FORMAT_R8G8B8A8_SINT;
    case codegen::TexelFormat::kUint8:
      return VK_FORMAT_R8G8B8A8_UINT;
    case codegen::TexelFormat::kNone:
      break;
  }
  return VK_FORMAT_UNDEFINED;
}

// VKSPMD_ROW_CACHE_SLOTS likewise: a count of slots, or nullopt when unset or empty.
absl::StatusOr<std::optional<int64_t>> RowCacheSlotsOverride() {
  return base::IntegerFromEnvironment("VKSPMD_ROW_CACHE_SLOTS", 0,
                                      std::numeric_limits<uint32_t>::max(), "slots");
}

}  // namespace

codegen::TargetInfo TargetFor(const runtime::MeshDevice& device) {
  const runtime::PhysicalDeviceInfo& info = device.device().physical_device();
  codegen::TargetInfo target;
  target.subgroup_size = info.subgroup_size;
  target.subgroup_shuffle = info.subgroup_shuffle && info.subgroup_size > 1;
  target.max_shared_memory_bytes = info.max_shared_memory_bytes;
  target.max_workgroup_count_x = info.max_workgroup_count[0];
  target.max_workgroup_count_y = info.max_workgroup_count[1];
  target.max_storage_buffer_range = info.max_storage_buffer_range;
  target.max_storage_buffers_per_stage = info.max_storage_buffers_per_stage;
  target.loop_iteration_limit = info.quirks.loop_iteration_limit;
  target.byte_predicates = info.storage_buffer_8bit && info.shader_int8;
  target.int8_buffers = info.storage_buffer_8bit && info.shader_int8;
  target.int16_buffers = info.storage_buffer_16bit && info.shader_int16;
  target.int64 = info.shader_int64;
  target.float64 = info.shader_float64;
  target.preserve_float32_denormals = info.denorm_preserve_float32;
  // Texel reads on CPU drivers (see TargetInfo::texel_reads); VKSPMD_TEXEL_READS=0|1 overrides
  // (tests run both ways on lavapipe; 1 tries them on a GPU).
  target.max_texel_buffer_elements = info.max_texel_buffer_elements;
  target.texel_reads = info.is_cpu();
  if (const std::optional<std::string> texels = base::EnvironmentValue("VKSPMD_TEXEL_READS");
      texels.has_value() && !texels->empty()) {
    target.texel_reads = *texels != "0";
  }
  target.texel_reads =
      target.texel_reads && info.uniform_texel_formats && info.max_texel_buffer_elements > 0;
  // By the device's kind, not its name; VKSPMD_DOT_KERNEL=shared_memory|registers overrides (tests
  // run the GPU variant on lavapipe).
  target.shared_memory_dot = !info.is_cpu() && info.subgroup_size >= 16;
  // f16 dots on tensor cores where the device offers a usable shape (16x16x16 first, else the
  // largest with sides of 8 to 32) and f16 arithmetic, 16-bit buffers and subgroups.
  if (info.cooperative_matrix_nv && info.shader_float16 && info.storage_buffer_16bit &&
      info.shader_int16 && info.subgroup_shuffle && info.subgroup_size >= 8) {
    const auto usable = [](uint32_t side) { return side == 8 || side == 16 || side == 32; };
    for (const runtime::PhysicalDeviceInfo::MatrixShape& shape : info.cooperative_matrix_f16_f32) {
      if (!usable(shape.m) || !usable(shape.n) || !usable(shape.k)) continue;
      const codegen::TargetInfo::MatrixShape& best = target.cooperative_matrix_f16;
      const bool square = shape.m == 16 && shape.n == 16 && shape.k == 16;
      if (best.m == 0 || square ||
          (!(best.m == 16 && best.n == 16 && best.k == 16) &&
           shape.m * shape.n * shape.k > best.m * best.n * best.k)) {
        target.cooperative_matrix_f16 = {shape.m, shape.n, shape.k};
      }
    }
  }
  // VKSPMD_ROW_CACHE_SLOTS=N: values per invocation row kernels keep between their loops (0:
  // recompute them in each loop, as before row caches; for comparisons); Executable::Compile
  // reports junk.
  if (const absl::StatusOr<std::optional<int64_t>> slots = RowCacheSlotsOverride();
      slots.ok() && slots->has_value()) {
    target.row_cache_slots = static_cast<uint32_t>(**slots);
  }
  target.dot_epilogues = base::EnvironmentValue("VKSPMD_DOT_EPILOGUES").value_or("1") != "0";
  // llvmpipe runs a fused dispatch's parts masked in every workgroup (measured: two AdamW updates
  // of 16384 elements took 1.04 ms as one dispatch, 0.75 ms as two); about 2048 invocations of
  // masked work cost what a dispatch's hand-off does there. VKSPMD_MASKED_PART_INVOCATIONS=N
  // overrides it (0: no limit, as before; for comparisons); Executable::Compile reports junk.
  if (info.is_cpu()) target.max_masked_part_invocations = 2048;
  if (const absl::StatusOr<std::optional<int64_t>> masked = MaskedPartInvocationsOverride();
      masked.ok() && masked->has_value()) {
    target.max_masked_part_invocations = static_cast<uint64_t>(**masked);
  }
  const std::string dot_kernel = base::EnvironmentValue("VKSPMD_DOT_KERNEL").value_or("");
  if (dot_kernel == "shared_memory" || dot_kernel == "registers") {
    target.shared_memory_dot = dot_kernel == "shared_memory";
    target.cooperative_matrix_f16 = {};
  }
  // cooperative_matrix: the device's choice, which Executable::Compile checks includes it.
  // cooperative_matrix_emulated[_MxNxK]: the kernel on ordinary code, for tests on any device with
  // f16 arithmetic, 16-bit buffers and subgroups (16x16x16 unless given).
  constexpr absl::string_view kEmulated = "cooperative_matrix_emulated";
  if (absl::string_view(dot_kernel).substr(0, kEmulated.size()) == kEmulated) {
    target.cooperative_matrix_f16 = {};
    uint32_t m = 16, n = 16, k = 16;
    if (dot_kernel.size() > kEmulated.size() &&
        std::sscanf(dot_kernel.c_str() + kEmulated.size(), "_%ux%ux%u", &m, &n, &k) != 3) {
      m = 0;
    }
    if (info.shader_float16 && info.storage_buffer_16bit && info.shader_int16 &&
        info.subgroup_shuffle) {
      target.cooperative_matrix_f16 = {m, n, k};
      target.cooperative_matrix_emulated = true;
      target.shared_memory_dot = true;
    }
  }
  return target;
}

absl::Status CheckDotKernelOverride(const codegen::TargetInfo& target,
                                    const runtime::MeshDevice& device) {
  const std::string dot_kernel = base::EnvironmentValue("VKSPMD_DOT_KERNEL").value_or("");
  if (dot_kernel.empty() || dot_kernel == "shared_memory" || dot_kernel == "registers") {
    return absl::OkStatus();
  }
  const bool emulated = dot_kernel.rfind("cooperative_matrix_emulated", 0) == 0;
  if (dot_kernel != "cooperative_matrix" && !emulated) {
    return absl::InvalidArgumentError(
        absl::StrCat("VKSPMD_DOT_KERNEL=", dot_kernel,
                     ": expected shared_memory, registers, cooperative_matrix or "
                     "cooperative_matrix_emulated[_MxNxK] (M, N, K of 8, 16 or 32)"));
  }
  if (emulated) {
    const auto usable = [](uint32_t side) { return side == 8 || side == 16 || side == 32; };
    const codegen::TargetInfo::MatrixShape& shape = target.cooperative_matrix_f16;
    if (usable(shape.m) && usable(shape.n) && usable(shape.k)) return absl::OkStatus();
    return absl::FailedPreconditionError(absl::StrCat(
        "VKSPMD_DOT_KERNEL=", dot_kernel, ": ", device.label(),
        " lacks shaderFloat16, 16-bit storage or subgroups, or the shape is not MxNxK with "
        "sides of 8, 16 or 32"));
  }
  if (target.cooperative_matrix_f16.m == 0) {
    const runtime::PhysicalDeviceInfo& info = device.device().physical_device();
    return absl::FailedPreconditionError(absl::StrCat(
        "VKSPMD_DOT_KERNEL=cooperative_matrix: ", device.label(), " (", info.name, ") ",
        info.cooperative_matrix_nv
            ? "offers no subgroup cooperative-matrix shape with f16 A/B and f32 C/D (or lacks "
              "shaderFloat16, 16-bit storage or subgroups)"
            : "has no VK_NV_cooperative_matrix (with its cooperativeMatrix feature)"));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Executable>> Executable::Compile(const ir::Module& module,
                                                                runtime::MeshDevice& device,
                                                                bool timestamps,
                                                                DeviceAssignment assignment) {
  debug::ScopedTraceSpan span("compile executable");
  span.AddArg("device", device.label());
  // Named now, whether or not tracing is on: a trace started later shows the device's name.
  debug::NameTraceProcess(debug::DeviceTracePid(device.mesh_index()), device.label());
  const codegen::TargetInfo target = TargetFor(device);
  VKSPMD_RETURN_IF_ERROR(CheckDotKernelOverride(target, device));
  VKSPMD_RETURN_IF_ERROR(MaskedPartInvocationsOverride().status());
  VKSPMD_RETURN_IF_ERROR(RowCacheSlotsOverride().status());
  absl::StatusOr<codegen::ProgramPlan> program_plan;
  {
    debug::ScopedTraceSpan plan_span("plan and generate kernels (fusion, GLSL)");
    program_plan = codegen::PlanProgram(module, target, {assignment.replica, assignment.partition});
  }
  VKSPMD_ASSIGN_OR_RETURN(codegen::ProgramPlan plan, std::move(program_plan));
  if (absl::Status dumped = DumpCompilationIfRequested(module, plan, device.mesh_index());
      !dumped.ok()) {
    std::fprintf(stderr, "vkspmd: VKSPMD_DUMP_DIR: %s\n", std::string(dumped.message()).c_str());
  }
  std::unique_ptr<Executable> executable(new Executable(device, std::move(plan)));
  executable->assignment_ = assignment;
  executable->rank_ =
      static_cast<int>(assignment.replica * module.partition_count() + assignment.partition);
  const codegen::ProgramPlan& program = executable->plan_;
  for (const ir::Instruction* parameter : module.entry()->parameters()) {
    executable->parameter_shapes_.push_back(parameter->shape());
  }
  VKSPMD_RETURN_IF_ERROR(executable->AllocateBuffers());
  executable->timestamps_ = timestamps;
  for (const codegen::KernelPlan& kernel : program.kernels) {
    if (kernel.collective == nullptr) ++executable->dispatch_count_;
  }
  // VKSPMD_ALL_REDUCE_BUCKETS=0 runs every all-reduce alone (to measure what buckets save).
  const std::optional<std::string> buckets = base::EnvironmentValue("VKSPMD_ALL_REDUCE_BUCKETS");
  if (buckets.has_value() && !buckets->empty() && *buckets != "0" && *buckets != "1") {
    return absl::InvalidArgumentError(
        absl::StrCat("VKSPMD_ALL_REDUCE_BUCKETS=", *buckets, ": expected 0 or 1"));
  }
  executable->bucket_all_reduces_ = !buckets.has_value() || *buckets != "0";
  // Kernels between two collectives form one segment; the host runs the collective, or the
  // bucket of all-reduces that follow each other.
  std::vector<Segment>& segments = executable->segments_;
  segments.emplace_back();
  // Before the first pipeline, so the driver starts from what earlier processes compiled.
  device.device().UsePipelineCacheStore(DevicePipelineCacheStore());
  for (size_t k = 0; k < program.kernels.size(); ++k) {
    const codegen::KernelPlan& kernel = program.kernels[k];
    if (kernel.collective != nullptr) {
      VKSPMD_ASSIGN_OR_RETURN(
          CollectiveStep step,
          PlanCollectiveStep(*kernel.collective, program.buffers[kernel.output].element_bytes,
                             assignment, module.replica_count(), module.partition_count()));
      if (executable->JoinBucket(static_cast<int>(k), step)) continue;
      Segment& segment = segments.back();
      segment.collective = static_cast<int>(k);
      segment.step = std::move(step);
      segment.members = {{static_cast<int>(k), 0, program.buffers[kernel.inputs[0]].byte_size()}};
      if (assignment.device_collectives != nullptr) {
        segment.on_device = assignment.device_collectives->Plan(
            segment.step, executable->rank_, program.buffers[kernel.inputs[0]].byte_size(),
            program.buffers[kernel.output].byte_size());
      }
      ++executable->collective_count_;
      segments.emplace_back();
      continue;
    }
    VKSPMD_ASSIGN_OR_RETURN(std::vector<uint32_t> spirv, CompileCached(kernel.glsl, kernel.name));
    runtime::PipelineSpec spec;
    spec.name = kernel.name;
    spec.spirv = spirv;
    Dispatch dispatch;
    dispatch.kernel = static_cast<int>(k);
    // A buffer split into parts (see BufferPlan::part_elements) takes one binding per part.
    auto bind = [&](int id, runtime::BindingAccess access) {
      const codegen::BufferPlan& planned = program.buffers[id];
      const uint64_t part_bytes = planned.part_elements * planned.element_bytes;
      for (uint32_t part = 0; part < planned.parts(); ++part) {
        spec.bindings.push_back(access);
        spec.texel_formats.push_back(access == runtime::BindingAccess::kRead
                                         ? TexelVkFormat(codegen::TexelReadFormat(program, planned))
                                         : VK_FORMAT_UNDEFINED);
        if (planned.parts() == 1) {
          // The value's own bytes, not the whole device buffer, which may be a larger one the
          // value reuses (or a larger donated argument): a texel view of all of it could exceed
          // maxTexelBufferElements where the value does not.
          dispatch.bindings.push_back({id, 0, planned.byte_size()});
        } else {
          uint64_t offset = part * part_bytes;
          dispatch.bindings.push_back(
              {id, offset, std::min(part_bytes, planned.byte_size() - offset)});
        }
      }
    };
    for (int input : kernel.inputs) bind(input, runtime::BindingAccess::kRead);
    for (int output : kernel.outputs()) bind(output, runtime::BindingAccess::kWrite);
    spec.push_constant_bytes = static_cast<uint32_t>(kernel.push_constants.size() * 4);
    // Kernels with the same source (comments aside) and bindings share one pipeline on the
    // device, across executables: a sweep over shapes whose sizes are push constants compiles
    // once, and so does a long chain split into equal kernels.
    std::string key = WithoutCommentLines(kernel.glsl);
    for (size_t binding = 0; binding < spec.bindings.size(); ++binding) {
      key += static_cast<char>('0' + static_cast<int>(spec.bindings[binding]));
      if (spec.texel_formats[binding] != VK_FORMAT_UNDEFINED) {
        absl::StrAppend(&key, "t", static_cast<int>(spec.texel_formats[binding]));
      }
    }
    VKSPMD_ASSIGN_OR_RETURN(dispatch.pipeline, device.device().SharedPipeline(key, [&] {
      debug::ScopedTraceSpan pipeline_span("pipeline creation (driver)");
      pipeline_span.AddArg("kernel", kernel.name);
      const auto start = std::chrono::steady_clock::now();
      auto pipeline = runtime::ComputePipeline::Create(device.device(), spec);
      debug::RecordPipelineCreate(SecondsSince(start));
      return pipeline;
    }));
    uint64_t groups = (kernel.invocations + kernel.local_size - 1) / kernel.local_size;
    uint32_t x = static_cast<uint32_t>(std::min<uint64_t>(groups, target.max_workgroup_count_x));
    uint32_t y = x == 0 ? 0 : static_cast<uint32_t>((groups + x - 1) / x);
    if (y > target.max_workgroup_count_y) {
      return absl::UnimplementedError(absl::StrCat("kernel ", kernel.name, " needs ", groups,
                                                   " workgroups, more than the device dispatches"));
    }
    dispatch.workgroups = {x, y, 1};
    segments.back().dispatches.push_back(std::move(dispatch));
  }
  // Now rather than at exit, which a killed or crashing process never reaches.
  device.device().SavePipelineCache();
  VKSPMD_RETURN_IF_ERROR(executable->Record(executable->OwnPhysicalBuffers(),
                                            executable->own_recording_.sequences, timestamps));
  return executable;
}

std::vector<runtime::Buffer*> Executable::OwnPhysicalBuffers() const {
  std::vector<runtime::Buffer*> physical;
  for (const auto& owned : buffers_) physical.push_back(owned.get());
  return physical;
}

absl::Status Executable::Record(const std::vector<runtime::Buffer*>& physical, Sequences& sequences,
                                bool timestamps) {
  debug::ScopedTraceSpan span("record command buffers");
  sequences.clear();
  collective_staging_.resize(segments_.size());
  for (size_t s = 0; s < segments_.size(); ++s) {
    const Segment& segment = segments_[s];
    const auto input_of = [&](const BucketMember& member) {
      return physical[physical_of_[plan_.kernels[member.kernel].inputs[0]]];
    };
    // The collective's inputs go, each at its place in the bucket, to the exchange buffer (a
    // device-side collective: the previous segment's is recorded first in this one) or to a
    // staging buffer where the host cannot read them in place.
    const Segment* previous = s > 0 && segments_[s - 1].on_device ? &segments_[s - 1] : nullptr;
    const bool to_exchange = segment.collective >= 0 && segment.on_device;
    bool to_staging = false;
    if (segment.collective >= 0 && !segment.on_device) {
      for (const BucketMember& member : segment.members) {
        to_staging = to_staging || !runtime::HostReadable(*input_of(member), member.bytes);
      }
      if (to_staging && collective_staging_[s] == nullptr) {
        VKSPMD_ASSIGN_OR_RETURN(
            collective_staging_[s],
            runtime::Buffer::Create(device_, std::max<uint64_t>(segment.packed_bytes(), 4),
                                    runtime::MemoryUsage::kStaging));
      }
    }
    if (segment.dispatches.empty() && !to_staging && previous == nullptr && !to_exchange) {
      sequences.push_back(nullptr);
      continue;
    }
    runtime::CommandRecorder recorder(device_);
    const int me = rank_;
    if (previous != nullptr) {
      for (const BucketMember& member : previous->members) {
        const codegen::KernelPlan& step = plan_.kernels[member.kernel];
        CollectiveStep member_step = previous->step;
        member_step.collective = step.collective;
        VKSPMD_RETURN_IF_ERROR(assignment_.device_collectives->Record(
            recorder, s - 1, member_step, me, *previous->on_device,
            *physical[physical_of_[step.output]], previous->packed_bytes(),
            plan_.buffers[step.output].byte_size(), member.offset));
      }
    }
    for (const Dispatch& dispatch : segment.dispatches) {
      const codegen::KernelPlan& kernel = plan_.kernels[dispatch.kernel];
      std::vector<runtime::BufferRange> bindings;
      for (const Dispatch::Binding& binding : dispatch.bindings) {
        bindings.push_back({physical[physical_of_[binding.buffer]], binding.offset, binding.size});
      }
      recorder.Dispatch(*dispatch.pipeline, std::move(bindings),
                        std::as_bytes(std::span(kernel.push_constants)), dispatch.workgroups,
                        kernel.name);
    }
    if (to_staging || to_exchange) {
      runtime::Buffer* packed = collective_staging_[s].get();
      if (to_exchange) {
        VKSPMD_ASSIGN_OR_RETURN(
            packed, assignment_.device_collectives->Exchange(s, me, segment.packed_bytes()));
      }
      for (const BucketMember& member : segment.members) {
        if (member.bytes > 0) {
          recorder.Copy(*input_of(member), 0, *packed, member.offset, member.bytes);
        }
      }
    }
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<runtime::CommandSequence> sequence,
                            recorder.Finish(timestamps));
    sequences.push_back(std::move(sequence));
  }
  ++recording_count_;
  return absl::OkStatus();
}

absl::Status Executable::AllocateBuffers() {
  runtime::ScopedMemoryTag tag(runtime::MemoryTag::kActivation);
  // Parameters, constants and outputs keep buffers of their own. An intermediate takes over the
  // smallest device buffer, big enough, whose last reader ran before the intermediate's kernel
  // (so no kernel reads and writes one buffer); the access tracker orders the reuse.
  const size_t count = plan_.buffers.size();
  std::vector<int> last_use(count, -1);
  std::vector<bool> pinned(count, false);
  for (int output : plan_.outputs) pinned[output] = true;
  for (size_t id = 0; id < count; ++id) {
    pinned[id] = pinned[id] || plan_.buffers[id].origin != codegen::BufferOrigin::kIntermediate;
  }
  for (size_t k = 0; k < plan_.kernels.size(); ++k) {
    for (int input : plan_.kernels[k].inputs) last_use[input] = static_cast<int>(k);
  }
  physical_of_.assign(count, -1);
  auto create = [&](uint64_t bytes) -> absl::StatusOr<int> {
    VKSPMD_ASSIGN_OR_RETURN(auto allocated, runtime::Buffer::Create(device_, bytes));
    buffers_.push_back(std::move(allocated));
    return static_cast<int>(buffers_.size()) - 1;
  };
  std::vector<bool> donated(count, false);
  for (const auto& [output, parameter] : plan_.donations) donated[output] = true;
  for (size_t id = 0; id < count; ++id) {
    if (!pinned[id] || donated[id]) continue;
    VKSPMD_ASSIGN_OR_RETURN(physical_of_[id], create(plan_.buffers[id].byte_size()));
    if (plan_.buffers[id].origin == codegen::BufferOrigin::kConstant) {
      std::vector<std::byte> bytes =
          ToDeviceBytes(*plan_.buffers[id].constant, plan_.buffers[id].element_bytes);
      VKSPMD_RETURN_IF_ERROR(runtime::Upload(bytes, *buffer(id)));
    }
  }
  // A donated parameter's buffer receives the output computed from it.
  for (const auto& [output, parameter] : plan_.donations)
    physical_of_[output] = physical_of_[parameter];
  std::vector<int> free_physical;
  std::vector<int> live;  // Logical intermediates holding a physical buffer.
  for (size_t k = 0; k < plan_.kernels.size(); ++k) {
    for (auto it = live.begin(); it != live.end();) {
      if (last_use[*it] < static_cast<int>(k)) {
        free_physical.push_back(physical_of_[*it]);
        it = live.erase(it);
      } else {
        ++it;
      }
    }
    for (int output : plan_.kernels[k].outputs()) {
      if (pinned[output]) continue;
      const uint64_t bytes = plan_.buffers[output].byte_size();
      auto best = free_physical.end();
      for (auto it = free_physical.begin(); it != free_physical.end(); ++it) {
        uint64_t size = buffers_[*it]->size();
        if (size >= bytes && (best == free_physical.end() || size < buffers_[*best]->size()))
          best = it;
      }
      if (best != free_physical.end()) {
        physical_of_[output] = *best;
        free_physical.erase(best);
      } else {
        VKSPMD_ASSIGN_OR_RETURN(physical_of_[output], create(bytes));
      }
      live.push_back(output);
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<ir::Literal> Executable::Run(const std::vector<ir::Literal>& arguments) {
  if (arguments.size() != parameter_shapes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the program takes ", parameter_shapes_.size(),
                                                   " arguments, ", arguments.size(),
                                                   " were given"));
  }
  for (size_t k = 0; k < arguments.size(); ++k) {
    if (arguments[k].shape() != parameter_shapes_[k]) {
      return absl::InvalidArgumentError(
          absl::StrCat("argument ", k, " is ", arguments[k].shape().ToString(), "; parameter ", k,
                       " is ", parameter_shapes_[k].ToString()));
    }
  }
  for (size_t id = 0; id < plan_.buffers.size(); ++id) {
    const codegen::BufferPlan& planned = plan_.buffers[id];
    if (planned.origin != codegen::BufferOrigin::kParameter) continue;
    std::vector<std::byte> bytes =
        ToDeviceBytes(arguments[planned.parameter_number], planned.element_bytes);
    VKSPMD_RETURN_IF_ERROR(runtime::Upload(bytes, *buffer(id)));
  }
  last_recording_ = &own_recording_;
  const bool traced = debug::TracingOn();
  const std::vector<runtime::Buffer*> physical = OwnPhysicalBuffers();
  VKSPMD_ASSIGN_OR_RETURN(const Sequences* sequences,
                          SequencesFor(own_recording_, physical, traced));
  VKSPMD_RETURN_IF_ERROR(RunSegments(*sequences, physical, traced));
  std::vector<ir::Literal> results;
  for (int id : plan_.outputs) {
    const codegen::BufferPlan& planned = plan_.buffers[id];
    std::vector<std::byte> bytes(planned.byte_size());
    VKSPMD_RETURN_IF_ERROR(runtime::Download(*buffer(id), 0, bytes));
    results.push_back(FromDeviceBytes(planned.shape, planned.element_bytes, bytes));
  }
  VKSPMD_RETURN_IF_ERROR(PerturbForTests(results));
  if (!plan_.tuple_result) return std::move(results.front());
  return ir::Literal::Tuple(std::move(results));
}

absl::StatusOr<std::vector<std::unique_ptr<runtime::Buffer>>> Executable::RunOnDevice(
    const std::vector<const runtime::Buffer*>& arguments) {
  std::vector<DeviceArgument> borrowed(arguments.size());
  for (size_t k = 0; k < arguments.size(); ++k) borrowed[k].borrowed = arguments[k];
  return RunOnDevice(std::move(borrowed));
}

absl::Status Executable::CheckDeviceArguments(
    const std::vector<const runtime::Buffer*>& arguments) const {
  if (arguments.size() != parameter_shapes_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the program takes ", parameter_shapes_.size(),
                                                   " arguments, ", arguments.size(),
                                                   " were given"));
  }
  for (const codegen::BufferPlan& planned : plan_.buffers) {
    if (planned.origin != codegen::BufferOrigin::kParameter) continue;
    const runtime::Buffer* argument = arguments[planned.parameter_number];
    if (argument == nullptr || argument->size() < planned.byte_size() ||
        &argument->device() != &device_) {
      return absl::InvalidArgumentError(absl::StrCat(
          "argument ", planned.parameter_number, " must be a buffer on ", device_.label(),
          " of at least ", planned.byte_size(), " bytes (", planned.shape.ToString(), ")"));
    }
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<runtime::Buffer>>> Executable::RunOnDevice(
    std::vector<DeviceArgument> arguments) {
  auto argument_buffer = [&](int64_t number) -> const runtime::Buffer* {
    const DeviceArgument& argument = arguments[number];
    return argument.owned != nullptr ? argument.owned.get() : argument.borrowed;
  };
  {
    std::vector<const runtime::Buffer*> buffers;
    for (size_t k = 0; k < arguments.size(); ++k) buffers.push_back(argument_buffer(k));
    VKSPMD_RETURN_IF_ERROR(CheckDeviceArguments(buffers));
  }
  // Donated parameters the plan updates in place stand for the executable's own buffer.
  std::vector<runtime::Buffer*> physical = OwnPhysicalBuffers();
  std::vector<int> result_from_argument(plan_.buffers.size(), -1);  // Output id → argument.
  std::vector<uint64_t> donated_serials;
  for (const auto& [output, parameter] : plan_.donations) {
    const int64_t number = plan_.buffers[parameter].parameter_number;
    if (arguments[number].owned == nullptr) continue;
    physical[physical_of_[parameter]] = arguments[number].owned.get();
    result_from_argument[output] = static_cast<int>(number);
    donated_serials.push_back(arguments[number].owned->serial());
  }
  for (size_t id = 0; id < plan_.buffers.size(); ++id) {
    const codegen::BufferPlan& planned = plan_.buffers[id];
    if (planned.origin != codegen::BufferOrigin::kParameter) continue;
    const runtime::Buffer* argument = argument_buffer(planned.parameter_number);
    runtime::Buffer* own = buffer(static_cast<int>(id));
    if (physical[physical_of_[id]] == own && planned.byte_size() > 0) {
      VKSPMD_RETURN_IF_ERROR(CopyFinished(*argument, *own, planned.byte_size()));
    }
  }
  Recording* recording = &own_recording_;
  if (!donated_serials.empty()) {
    auto found =
        std::find_if(donated_recordings_.begin(), donated_recordings_.end(),
                     [&](const auto& kept) { return kept->donated_serials == donated_serials; });
    if (found == donated_recordings_.end()) {
      // A loop alternating between two buffer sets (double buffering) still records only twice.
      constexpr size_t kKeptRecordings = 2;
      if (donated_recordings_.size() == kKeptRecordings) donated_recordings_.pop_back();
      auto fresh = std::make_unique<Recording>();
      fresh->donated_serials = donated_serials;
      VKSPMD_RETURN_IF_ERROR(Record(physical, fresh->sequences, timestamps_));
      donated_recordings_.insert(donated_recordings_.begin(), std::move(fresh));
      found = donated_recordings_.begin();
    }
    recording = found->get();
  }
  last_recording_ = recording;
  const bool traced = debug::TracingOn();
  VKSPMD_ASSIGN_OR_RETURN(const Sequences* sequences, SequencesFor(*recording, physical, traced));
  VKSPMD_RETURN_IF_ERROR(RunSegments(*sequences, physical, traced));
  std::vector<std::unique_ptr<runtime::Buffer>> results;
  for (int id : plan_.outputs) {
    if (result_from_argument[id] >= 0) {
      results.push_back(std::move(arguments[result_from_argument[id]].owned));
      continue;
    }
    // Results get buffers of their own: the executable's are reused by the next run.
    const uint64_t bytes = plan_.buffers[id].byte_size();
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<runtime::Buffer> result,
                            runtime::Buffer::Create(device_, bytes));
    if (bytes > 0) {
      VKSPMD_RETURN_IF_ERROR(CopyFinished(*buffer(id), *result, bytes));
    }
    results.push_back(std::move(result));
  }
  return results;
}

absl::StatusOr<const Executable::Sequences*> Executable::SequencesFor(
    Recording& recording, const std::vector<runtime::Buffer*>& physical, bool traced) {
  if (!traced || timestamps_) return &recording.sequences;
  const runtime::PhysicalDeviceInfo& info = device_.device().physical_device();
  // Without timestamps the trace has host spans only.
  if (info.queue_families[info.compute_queue_family].timestamp_valid_bits == 0) {
    return &recording.sequences;
  }
  if (recording.traced_sequences.empty()) {
    VKSPMD_RETURN_IF_ERROR(Record(physical, recording.traced_sequences, /*timestamps=*/true));
  }
  return &recording.traced_sequences;
}

absl::Status Executable::RunSegments(const Sequences& sequences,
                                     const std::vector<runtime::Buffer*>& physical, bool traced) {
  collective_seconds_ = 0;
  host_waits_ = 0;
  // Counted before the run: a reader waiting for the run's results then sees them counted.
  debug::RecordDispatches(dispatch_count_, collective_count_);
  // Submitted sequences not waited for yet (device-side collectives leave them running), and the
  // waits the next submission needs (its group's exchange buffers written).
  std::vector<runtime::CommandSequence*> in_flight;
  std::vector<runtime::SemaphoreWait> waits;
  const auto wait_in_flight = [&]() -> absl::Status {
    if (in_flight.empty()) return absl::OkStatus();
    ++host_waits_;
    // In submission order: the first wait covers the others, which are then only bookkeeping.
    for (runtime::CommandSequence* sequence : in_flight) {
      VKSPMD_RETURN_IF_ERROR(sequence->Wait());
    }
    in_flight.clear();
    return absl::OkStatus();
  };
  uint64_t submitted = 0;  // The timeline value of this device's latest submission.
  for (size_t s = 0; s < segments_.size(); ++s) {
    const Segment& segment = segments_[s];
    if (sequences[s] != nullptr) {
      if (traced) {
        debug::ScopedTraceSpan span("submit and wait");
        const double submitted_us = debug::TraceNowMicros();
        VKSPMD_RETURN_IF_ERROR(sequences[s]->Start(waits));
        submitted = sequences[s]->pending();
        in_flight.push_back(sequences[s].get());
        VKSPMD_RETURN_IF_ERROR(wait_in_flight());
        TraceKernels(s, *sequences[s], submitted_us, debug::TraceNowMicros());
      } else {
        VKSPMD_RETURN_IF_ERROR(sequences[s]->Start(waits));
        submitted = sequences[s]->pending();
        in_flight.push_back(sequences[s].get());
      }
      waits.clear();
    }
    if (segment.collective < 0) continue;
    if (segment.on_device) {
      // The segment's sequence ends with the copy to the exchange buffer (so it exists); the
      // next one waits for the group's copies.
      const auto meet_start = std::chrono::steady_clock::now();
      const double meet_start_us = traced ? debug::TraceNowMicros() : 0;
      VKSPMD_ASSIGN_OR_RETURN(
          waits, assignment_.device_collectives->Meet(s, rank_, *segment.on_device,
                                                      {device_.timeline(), submitted}));
      collective_seconds_ += SecondsSince(meet_start);
      if (traced) {
        // The span is the host's rendezvous of submissions; the exchange copy and the combine
        // kernel show as kernels of the segments around it.
        const uint64_t output_bytes =
            segment.members.size() == 1
                ? plan_.buffers[plan_.kernels[segment.members.front().kernel].output].byte_size()
                : segment.packed_bytes();
        TraceCollective(s, meet_start_us, debug::TraceNowMicros(), segment.packed_bytes(),
                        output_bytes);
      }
      continue;
    }
    VKSPMD_RETURN_IF_ERROR(wait_in_flight());
    VKSPMD_RETURN_IF_ERROR(RunHostCollective(s, physical, traced));
  }
  VKSPMD_RETURN_IF_ERROR(wait_in_flight());
  if (traced) TraceMemory();
  return absl::OkStatus();
}

size_t Executable::device_collective_count() const {
  return std::count_if(segments_.begin(), segments_.end(),
                       [](const Segment& segment) { return segment.on_device.has_value(); });
}

absl::StatusOr<std::vector<runtime::StepTiming>> Executable::Timings() const {
  std::vector<runtime::StepTiming> timings;
  for (const auto& sequence : last_recording_->sequences) {
    if (sequence == nullptr) continue;
    VKSPMD_ASSIGN_OR_RETURN(std::vector<runtime::StepTiming> part, sequence->ReadTimings());
    timings.insert(timings.end(), part.begin(), part.end());
  }
  return timings;
}

}  // namespace vkspmd::exec
