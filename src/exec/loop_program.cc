// Host-driven loops over mesh programs (see loop_program.h).
#include "src/exec/loop_program.h"

#include <utility>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/collectives/in_process_world.h"
#include "src/exec/executable.h"
#include "src/ir/control_flow_lowering.h"
#include "src/ir/loop_split.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::exec {
namespace {

absl::StatusOr<std::unique_ptr<ir::Module>> LowerKeepingLoops(const ir::Module& module) {
  return ir::LowerControlFlow(module, {.keep_unknown_loops = true});
}

std::vector<ir::Sharding> HloShardings(const std::vector<spmd::AxisSharding>& shardings,
                                       const spmd::Mesh& mesh) {
  std::vector<ir::Sharding> result;
  for (const spmd::AxisSharding& sharding : shardings) {
    result.push_back(spmd::ToHloSharding(sharding, mesh));
  }
  return result;
}

// Gives `module`'s entry the parameter and root shardings a piece must keep.
void Annotate(ir::Module& module, const std::vector<ir::Sharding>* parameters,
              const std::vector<ir::Sharding>* results) {
  ir::Computation& entry = *module.entry();
  if (parameters != nullptr) {
    for (int64_t p = 0; p < entry.parameter_count(); ++p) {
      entry.parameter(p)->set_sharding(parameters->at(p));
    }
  }
  if (results == nullptr) return;
  ir::Instruction* root = entry.root();
  root->set_sharding(root->shape().IsTuple() ? ir::Sharding::Tuple(*results) : results->at(0));
}

// Whether `a` and `b` give every device the same part of a value of `shape` (a replicated and a
// maximal sharding do on one device).
bool SameShards(const ir::Sharding& a, const ir::Sharding& b, const ir::Shape& shape,
                int64_t devices) {
  if (a == b) return true;
  for (int64_t d = 0; d < devices; ++d) {
    if (a.TileOffsetForDevice(shape, d) != b.TileOffsetForDevice(shape, d) ||
        a.TileLimitForDevice(shape, d) != b.TileLimitForDevice(shape, d)) {
      return false;
    }
  }
  return true;
}

std::vector<ShardedBuffer*> Pointers(const std::vector<std::unique_ptr<ShardedBuffer>>& values) {
  std::vector<ShardedBuffer*> pointers;
  for (const auto& value : values) pointers.push_back(value.get());
  return pointers;
}

// The replicated predicate or branch index every device computed; an error naming `what` when
// they differ.
absl::StatusOr<int64_t> ReadSelector(const ShardedBuffer& selector, const std::string& what) {
  std::optional<int64_t> value;
  for (size_t d = 0; d < selector.shard_count(); ++d) {
    if (!selector.addressable(d)) continue;
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal shard, selector.DownloadShard(d));
    const int64_t read = shard.GetAsInt64(0);
    if (value.has_value() && *value != read) {
      return absl::InternalError(
          fmt::format("{}: the devices disagree on its {} (device {} says {}, device 0 {})", what,
                      selector.shape().dtype() == ir::DType::kPred ? "condition" : "branch index",
                      d, read, *value));
    }
    value = read;
  }
  if (!value.has_value()) {
    return absl::FailedPreconditionError(
        fmt::format("{}: no device of this process holds its selector", what));
  }
  return *value;
}

// Leaves `next`, `next` + 1, ... as a value of `shape` (the entry's root, tuples nested).
ir::Literal Nest(const ir::Shape& shape, std::vector<ir::Literal>& leaves, size_t& next) {
  if (shape.IsArray()) return std::move(leaves.at(next++));
  std::vector<ir::Literal> elements;
  for (const ir::Shape& element : shape.tuple_elements()) {
    elements.push_back(Nest(element, leaves, next));
  }
  return ir::Literal::Tuple(std::move(elements));
}

}  // namespace

// A piece without loops (program), a loop with the pieces around and inside it, or a
// conditional with the pieces around it and its branches.
struct LoopProgram::Stage {
  std::unique_ptr<MeshProgram> program;
  std::string loop;  // The while's or conditional's description.
  int64_t state_count = 0;
  std::unique_ptr<Stage> before, condition, body, after;
  std::vector<std::unique_ptr<Stage>> branches;   // A conditional's.
  std::vector<int64_t> operand_offsets;           // Per branch: its first leaf in before's outputs.
  int64_t carried_offset = 0;                     // A conditional's carried leaves in before's.
  std::vector<ir::Sharding> parameter_shardings;  // Per parameter.
  std::vector<ir::Sharding> result_shardings;     // Per leaf of the root.
};

LoopProgram::~LoopProgram() = default;

absl::StatusOr<bool> LoopProgram::NeedsHostLoop(const ir::Module& module) {
  if (!ir::NeedsControlFlowLowering(module)) return false;
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> lowered, LowerKeepingLoops(module));
  return ir::FirstHostControlFlow(*lowered) != nullptr;
}

absl::StatusOr<std::unique_ptr<LoopProgram>> LoopProgram::Partition(const ir::Module& module,
                                                                    const spmd::Mesh& mesh) {
  return Create(module, mesh, /*per_device=*/false);
}

absl::StatusOr<std::unique_ptr<LoopProgram>> LoopProgram::FromPerDeviceModule(
    const ir::Module& module, const spmd::Mesh& mesh) {
  if (module.replica_count() * module.partition_count() != mesh.device_count()) {
    return absl::InvalidArgumentError(fmt::format(
        "the per-device program runs on {} replica(s) x {} partition(s); the mesh has {} devices",
        module.replica_count(), module.partition_count(), mesh.device_count()));
  }
  return Create(module, mesh, /*per_device=*/true);
}

absl::StatusOr<std::unique_ptr<LoopProgram>> LoopProgram::Create(const ir::Module& module,
                                                                 const spmd::Mesh& mesh,
                                                                 bool per_device) {
  if (module.entry() == nullptr) return absl::InvalidArgumentError("the module has no entry");
  std::unique_ptr<LoopProgram> program(new LoopProgram());
  program->mesh_ = mesh;
  program->per_device_ = per_device;
  program->root_shape_ = module.entry()->root()->shape();
  VKSPMD_ASSIGN_OR_RETURN(program->root_, program->Build(module, nullptr, nullptr));
  Stage* first = program->root_.get();
  while (first->program == nullptr) first = first->before.get();
  program->entry_ = first->program.get();
  return program;
}

absl::StatusOr<std::unique_ptr<LoopProgram::Stage>> LoopProgram::Build(
    const ir::Module& module, const std::vector<ir::Sharding>* parameters,
    const std::vector<ir::Sharding>* results) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ir::Module> lowered, LowerKeepingLoops(module));
  auto stage = std::make_unique<Stage>();
  const ir::Instruction* loop = ir::FirstHostControlFlow(*lowered);
  if (loop == nullptr && per_device_) {
    stage->program = MeshProgram::FromPerDeviceModule(std::move(lowered), mesh_);
    stage->parameter_shardings.assign(stage->program->parameter_shardings().size(),
                                      ir::Sharding::Replicated());
    stage->result_shardings.assign(stage->program->result_shardings().size(),
                                   ir::Sharding::Replicated());
    ++program_count_;
    return stage;
  }
  if (loop == nullptr) {
    Annotate(*lowered, parameters, results);
    VKSPMD_ASSIGN_OR_RETURN(stage->program, MeshProgram::Partition(*lowered, mesh_));
    const spmd::Mesh& mesh = stage->program->mesh();
    for (const spmd::AxisSharding& sharding : stage->program->parameter_shardings()) {
      stage->parameter_shardings.push_back(spmd::ToHloSharding(sharding, mesh));
    }
    stage->result_shardings = HloShardings(stage->program->result_shardings(), mesh);
    ++program_count_;
    collective_count_ += static_cast<int64_t>(stage->program->collective_count());
    if (results != nullptr) {
      for (size_t i = 0; i < results->size(); ++i) {
        if (SameShards(stage->result_shardings[i], (*results)[i],
                       stage->program->result_shapes()[i], mesh_.device_count())) {
          continue;
        }
        return absl::UnimplementedError(fmt::format(
            "{}: result {} comes out sharded {}, not {} as the loop state needs", module.name(), i,
            stage->result_shardings[i].ToString(), (*results)[i].ToString()));
      }
    }
    return stage;
  }
  if (loop->opcode() == ir::Opcode::kConditional) {
    VKSPMD_RETURN_IF_ERROR(BuildConditional(*stage, *lowered, *loop, parameters, results));
    return stage;
  }
  VKSPMD_ASSIGN_OR_RETURN(ir::LoopSplit split, ir::SplitAtLoop(*lowered, *loop));
  ++loop_count_;
  stage->loop = split.loop;
  stage->state_count = split.state_count;
  VKSPMD_ASSIGN_OR_RETURN(stage->before, Build(*split.before, parameters, nullptr));
  const std::vector<ir::Sharding>& before_results = stage->before->result_shardings;
  const std::vector<ir::Sharding> state(before_results.begin(),
                                        before_results.begin() + split.state_count);
  const std::vector<ir::Sharding> replicated = {ir::Sharding::Replicated()};
  VKSPMD_ASSIGN_OR_RETURN(stage->condition, Build(*split.condition, &state, &replicated));
  VKSPMD_ASSIGN_OR_RETURN(stage->body, Build(*split.body, &state, &state));
  VKSPMD_ASSIGN_OR_RETURN(stage->after, Build(*split.after, &before_results, results));
  stage->parameter_shardings = stage->before->parameter_shardings;
  stage->result_shardings = stage->after->result_shardings;
  return stage;
}

absl::Status LoopProgram::BuildConditional(Stage& stage, const ir::Module& module,
                                           const ir::Instruction& conditional,
                                           const std::vector<ir::Sharding>* parameters,
                                           const std::vector<ir::Sharding>* results) {
  VKSPMD_ASSIGN_OR_RETURN(ir::ConditionalSplit split, ir::SplitAtConditional(module, conditional));
  ++conditional_count_;
  stage.loop = split.conditional;
  VKSPMD_ASSIGN_OR_RETURN(stage.before, Build(*split.before, parameters, nullptr));
  std::vector<ir::Sharding> before_results = stage.before->result_shardings;
  const ir::Sharding replicated = ir::Sharding::Replicated();
  if (!SameShards(before_results[0], replicated, split.before->entry()->root()->operand(0)->shape(),
                  mesh_.device_count())) {
    // Every device must hold the selector to take the same branch: partitioned again with it
    // replicated, the rest as it came out.
    before_results[0] = replicated;
    VKSPMD_ASSIGN_OR_RETURN(stage.before, Build(*split.before, parameters, &before_results));
  }
  int64_t offset = 1;
  std::vector<ir::Sharding> branch_results;  // The first branch's, which every other must match.
  for (size_t i = 0; i < split.branches.size(); ++i) {
    const std::vector<ir::Sharding> operands(
        before_results.begin() + offset, before_results.begin() + offset + split.operand_counts[i]);
    stage.operand_offsets.push_back(offset);
    offset += split.operand_counts[i];
    VKSPMD_ASSIGN_OR_RETURN(
        std::unique_ptr<Stage> branch,
        Build(*split.branches[i], &operands, i == 0 ? nullptr : &branch_results));
    if (i == 0) branch_results = branch->result_shardings;
    stage.branches.push_back(std::move(branch));
  }
  stage.carried_offset = offset;
  std::vector<ir::Sharding> after_parameters = branch_results;
  after_parameters.insert(after_parameters.end(), before_results.begin() + offset,
                          before_results.end());
  VKSPMD_ASSIGN_OR_RETURN(stage.after, Build(*split.after, &after_parameters, results));
  stage.parameter_shardings = stage.before->parameter_shardings;
  stage.result_shardings = stage.after->result_shardings;
  return absl::OkStatus();
}

absl::Status LoopProgram::Compile(std::vector<runtime::MeshDevice*> devices,
                                  MeshProgramOptions options) {
  if (options.world == nullptr) {
    VKSPMD_ASSIGN_OR_RETURN(
        options.world, collectives::InProcessWorld::Create(static_cast<int>(mesh_.device_count())));
  }
  devices_ = devices;
  return CompileStage(*root_, devices, options);
}

absl::Status LoopProgram::CompileStage(Stage& stage,
                                       const std::vector<runtime::MeshDevice*>& devices,
                                       const MeshProgramOptions& options) {
  if (stage.program != nullptr) return stage.program->Compile(devices, options);
  for (Stage* piece :
       {stage.before.get(), stage.condition.get(), stage.body.get(), stage.after.get()}) {
    if (piece != nullptr) VKSPMD_RETURN_IF_ERROR(CompileStage(*piece, devices, options));
  }
  for (const std::unique_ptr<Stage>& branch : stage.branches) {
    VKSPMD_RETURN_IF_ERROR(CompileStage(*branch, devices, options));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> LoopProgram::Run(
    const std::vector<const ShardedBuffer*>& arguments) {
  last_iterations_ = 0;
  last_branches_.clear();
  std::vector<ShardedBuffer*> borrowed;
  for (const ShardedBuffer* argument : arguments) {
    borrowed.push_back(const_cast<ShardedBuffer*>(argument));  // Never donated below.
  }
  return RunStage(*root_, borrowed, std::vector<bool>(arguments.size(), false));
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> LoopProgram::RunStage(
    Stage& stage, const std::vector<ShardedBuffer*>& arguments, const std::vector<bool>& donate) {
  if (stage.program != nullptr) return stage.program->Run(arguments, donate);
  VKSPMD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ShardedBuffer>> outputs,
                          RunStage(*stage.before, arguments, donate));
  if (!stage.branches.empty()) return RunConditional(stage, std::move(outputs));
  std::vector<std::unique_ptr<ShardedBuffer>> state;
  for (int64_t i = 0; i < stage.state_count; ++i) state.push_back(std::move(outputs[i]));
  const std::vector<bool> keep(state.size(), false);
  const std::vector<bool> give(state.size(), true);
  for (;;) {
    VKSPMD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ShardedBuffer>> predicate,
                            RunStage(*stage.condition, Pointers(state), keep));
    VKSPMD_ASSIGN_OR_RETURN(const int64_t taken,
                            ReadSelector(*predicate.at(0), "while " + stage.loop));
    if (taken == 0) break;
    // The body takes the state's buffers: where it updates a leaf in place nothing is copied.
    VKSPMD_ASSIGN_OR_RETURN(state, RunStage(*stage.body, Pointers(state), give));
    ++last_iterations_;
  }
  for (size_t i = static_cast<size_t>(stage.state_count); i < outputs.size(); ++i) {
    state.push_back(std::move(outputs[i]));
  }
  return RunStage(*stage.after, Pointers(state), std::vector<bool>(state.size(), true));
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> LoopProgram::RunConditional(
    Stage& stage, std::vector<std::unique_ptr<ShardedBuffer>> outputs) {
  VKSPMD_ASSIGN_OR_RETURN(const int64_t selector,
                          ReadSelector(*outputs.at(0), "conditional " + stage.loop));
  const auto count = static_cast<int64_t>(stage.branches.size());
  int64_t chosen = count - 1;  // As XLA: an index outside 0..N-1 runs the last branch.
  if (outputs[0]->shape().dtype() == ir::DType::kPred) {
    chosen = selector != 0 ? 0 : 1;
  } else if (selector >= 0 && selector < count) {
    chosen = selector;
  }
  last_branches_.push_back(chosen);
  const int64_t first = stage.operand_offsets[chosen];
  const int64_t end = chosen + 1 < count ? stage.operand_offsets[chosen + 1] : stage.carried_offset;
  std::vector<ShardedBuffer*> operands;
  for (int64_t i = first; i < end; ++i) operands.push_back(outputs[i].get());
  // The operand's buffers are before's outputs, used by nothing else: the branch may take them.
  VKSPMD_ASSIGN_OR_RETURN(
      std::vector<std::unique_ptr<ShardedBuffer>> values,
      RunStage(*stage.branches[chosen], operands, std::vector<bool>(operands.size(), true)));
  for (size_t i = static_cast<size_t>(stage.carried_offset); i < outputs.size(); ++i) {
    values.push_back(std::move(outputs[i]));
  }
  return RunStage(*stage.after, Pointers(values), std::vector<bool>(values.size(), true));
}

absl::StatusOr<std::vector<ir::Literal>> LoopProgram::RunPerDevice(
    const std::vector<std::vector<ir::Literal>>& per_device) {
  const auto devices = static_cast<size_t>(mesh_.device_count());
  if (devices_.empty()) return absl::FailedPreconditionError("the loop program is not compiled");
  if (per_device.size() != devices) {
    return absl::InvalidArgumentError(
        fmt::format("{} argument lists for {} devices", per_device.size(), devices));
  }
  std::vector<std::unique_ptr<ShardedBuffer>> arguments;
  for (size_t p = 0; p < per_device[0].size(); ++p) {
    std::vector<ir::Literal> shards;
    for (const std::vector<ir::Literal>& device_arguments : per_device) {
      shards.push_back(device_arguments.at(p));
    }
    if (p >= entry_->parameter_shardings().size()) {
      return absl::InvalidArgumentError(
          fmt::format("the program has {} parameters", entry_->parameter_shardings().size()));
    }
    // Replicated in form: device d's shard is its own argument.
    VKSPMD_ASSIGN_OR_RETURN(
        std::unique_ptr<ShardedBuffer> value,
        ShardedBuffer::FromHostShards(shards[0].shape(), entry_->parameter_shardings()[p],
                                      entry_->mesh(), devices_, shards));
    arguments.push_back(std::move(value));
  }
  std::vector<const ShardedBuffer*> pointers;
  for (const auto& value : arguments) pointers.push_back(value.get());
  VKSPMD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ShardedBuffer>> results, Run(pointers));
  std::vector<ir::Literal> outputs;
  for (size_t d = 0; d < devices; ++d) {
    std::vector<ir::Literal> leaves;
    for (const auto& result : results) {
      VKSPMD_ASSIGN_OR_RETURN(ir::Literal leaf, result->DownloadShard(d));
      leaves.push_back(std::move(leaf));
    }
    VKSPMD_RETURN_IF_ERROR(PerturbForTests(leaves));
    size_t next = 0;
    outputs.push_back(Nest(root_shape_, leaves, next));
  }
  return outputs;
}

absl::StatusOr<ir::Literal> LoopProgram::Run(const std::vector<ir::Literal>& arguments) {
  std::vector<std::unique_ptr<ShardedBuffer>> scattered;
  for (size_t p = 0; p < arguments.size(); ++p) {
    VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<ShardedBuffer> value, entry_->Scatter(arguments[p], p));
    scattered.push_back(std::move(value));
  }
  std::vector<const ShardedBuffer*> pointers;
  for (const auto& value : scattered) pointers.push_back(value.get());
  VKSPMD_ASSIGN_OR_RETURN(std::vector<std::unique_ptr<ShardedBuffer>> results, Run(pointers));
  std::vector<ir::Literal> leaves;
  for (const auto& result : results) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal leaf, result->Gather());
    leaves.push_back(std::move(leaf));
  }
  VKSPMD_RETURN_IF_ERROR(PerturbForTests(leaves));
  size_t next = 0;
  return Nest(root_shape_, leaves, next);
}

}  // namespace vkspmd::exec
