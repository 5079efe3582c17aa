// Partitioning, compiling and feeding a mesh program.
#include "src/exec/mesh_program.h"

#include <cstdio>
#include <string>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/debug/trace_writer.h"
#include "src/exec/program_dump.h"
#include "src/exec/sharded_value.h"
#include "src/spmd/partitioner.h"

namespace vkspmd::exec {
namespace {

std::vector<ir::Shape> RootLeafShapes(const ir::Module& module) {
  const ir::Shape& root = module.entry()->root()->shape();
  return root.IsTuple() ? root.tuple_elements() : std::vector<ir::Shape>{root};
}

}  // namespace

absl::StatusOr<std::unique_ptr<MeshProgram>> MeshProgram::Create(
    const ir::Module& module, const spmd::Mesh& mesh, std::vector<runtime::MeshDevice*> devices,
    Options options) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<MeshProgram> program, Partition(module, mesh));
  VKSPMD_RETURN_IF_ERROR(program->Compile(std::move(devices), std::move(options)));
  return program;
}

absl::StatusOr<std::unique_ptr<MeshProgram>> MeshProgram::Partition(const ir::Module& module,
                                                                    const spmd::Mesh& mesh) {
  if (absl::Status dumped = DumpPartitionInputIfRequested(module, mesh); !dumped.ok()) {
    std::fprintf(stderr, "vkspmd: VKSPMD_DUMP_DIR: %s\n", std::string(dumped.message()).c_str());
  }
  absl::StatusOr<spmd::PartitionResult> partitioned;
  {
    debug::ScopedTraceSpan span("partition (sharding propagation, SPMD partitioner)");
    partitioned = spmd::Partition(module, mesh);
  }
  VKSPMD_ASSIGN_OR_RETURN(spmd::PartitionResult partition, std::move(partitioned));
  std::unique_ptr<MeshProgram> program(new MeshProgram());
  program->mesh_ = partition.mesh;  // the shardings' mesh: `mesh`, refined where needed
  program->program_ = std::move(partition.module);
  for (const std::vector<spmd::AxisSharding>& leaves : partition.parameter_shardings) {
    program->parameter_shardings_.push_back(leaves.at(0));
  }
  program->result_shardings_ = std::move(partition.result_shardings);
  program->result_shapes_ = RootLeafShapes(module);
  program->collective_count_ = partition.collectives.size();
  program->bytes_per_device_ = partition.BytesPerDevice();
  return program;
}

std::unique_ptr<MeshProgram> MeshProgram::FromPerDeviceModule(std::unique_ptr<ir::Module> module,
                                                              const spmd::Mesh& mesh) {
  std::unique_ptr<MeshProgram> program(new MeshProgram());
  program->mesh_ = mesh;
  program->program_ = std::move(module);
  for (const ir::Instruction* parameter : program->program_->entry()->parameters()) {
    program->parameter_shardings_.push_back(
        spmd::AxisSharding::Replicated(parameter->shape().rank()));
  }
  program->result_shapes_ = RootLeafShapes(*program->program_);
  for (const ir::Shape& shape : program->result_shapes_) {
    program->result_shardings_.push_back(spmd::AxisSharding::Replicated(shape.rank()));
  }
  return program;
}

absl::Status MeshProgram::Compile(std::vector<runtime::MeshDevice*> devices, Options options) {
  if (executable_ != nullptr) return absl::FailedPreconditionError("the program is compiled");
  // Aliases the partitioner dropped (parameter and output split differently) donate nothing.
  for (const ir::InputOutputAlias& alias : program_->input_output_aliases()) {
    aliased_parameters_.insert(alias.parameter_number);
  }
  // With a world of several processes, devices of other processes are null: Scatter uploads only
  // this process's shards, and Gather needs every shard here (lazy reads gather across
  // processes through the world, exec/sharded_gather.h).
  devices_ = std::move(devices);
  debug::ScopedTraceSpan span("compile executables");
  VKSPMD_ASSIGN_OR_RETURN(
      executable_,
      MeshExecutable::Compile(*program_, devices_, options.timestamps, std::move(options.world)));
  return absl::OkStatus();
}

absl::Status MeshProgram::CheckCompiled() const {
  return executable_ != nullptr
             ? absl::OkStatus()
             : absl::FailedPreconditionError("the mesh program is not compiled for devices yet");
}

absl::StatusOr<std::unique_ptr<ShardedBuffer>> MeshProgram::Scatter(const ir::Literal& value,
                                                                    size_t parameter) const {
  VKSPMD_RETURN_IF_ERROR(CheckCompiled());
  if (parameter >= parameter_shardings_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the program has ", parameter_shardings_.size(),
                                                   " parameters, not ", parameter + 1));
  }
  return ShardedBuffer::Scatter(value, parameter_shardings_[parameter], mesh_, devices_);
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> MeshProgram::Run(
    const std::vector<ShardedBuffer*>& arguments, const std::vector<bool>& donate) {
  VKSPMD_RETURN_IF_ERROR(CheckCompiled());
  return executable_->RunSharded(arguments, donate, result_shapes_, result_shardings_, mesh_);
}

absl::StatusOr<std::vector<std::unique_ptr<ShardedBuffer>>> MeshProgram::Run(
    const std::vector<const ShardedBuffer*>& arguments) {
  VKSPMD_RETURN_IF_ERROR(CheckCompiled());
  return executable_->RunSharded(arguments, result_shapes_, result_shardings_, mesh_);
}

absl::StatusOr<ir::Literal> MeshProgram::Gather(
    const std::vector<std::unique_ptr<ShardedBuffer>>& results) const {
  std::vector<ir::Literal> leaves;
  for (const std::unique_ptr<ShardedBuffer>& result : results) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal leaf, result->Gather());
    leaves.push_back(std::move(leaf));
  }
  if (program_->entry()->root()->shape().IsTuple()) return ir::Literal::Tuple(std::move(leaves));
  if (leaves.size() != 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("one result for the program's array root; ", leaves.size(), " were given"));
  }
  return std::move(leaves[0]);
}

absl::StatusOr<std::vector<std::vector<ir::Literal>>> MeshProgram::ShardArguments(
    const std::vector<ir::Literal>& arguments) const {
  if (arguments.size() != parameter_shardings_.size()) {
    return absl::InvalidArgumentError(absl::StrCat("the program has ", parameter_shardings_.size(),
                                                   " parameters; ", arguments.size(),
                                                   " arguments were given"));
  }
  std::vector<std::vector<ir::Literal>> per_device(mesh_.device_count());
  for (size_t p = 0; p < arguments.size(); ++p) {
    for (int64_t d = 0; d < mesh_.device_count(); ++d) {
      VKSPMD_ASSIGN_OR_RETURN(ir::Literal shard,
                              ShardLiteral(arguments[p], parameter_shardings_[p], mesh_, d));
      per_device[d].push_back(std::move(shard));
    }
  }
  return per_device;
}

absl::StatusOr<std::vector<ir::Literal>> MeshProgram::RunShards(
    const std::vector<std::vector<ir::Literal>>& per_device) {
  VKSPMD_RETURN_IF_ERROR(CheckCompiled());
  return executable_->Run(per_device);
}

absl::StatusOr<ir::Literal> MeshProgram::Assemble(
    const std::vector<ir::Literal>& per_device) const {
  const bool tuple = program_->entry()->root()->shape().IsTuple();
  std::vector<ir::Literal> leaves;
  for (size_t leaf = 0; leaf < result_shapes_.size(); ++leaf) {
    std::vector<ir::Literal> shards;
    for (const ir::Literal& result : per_device) {
      shards.push_back(tuple ? result.tuple_elements()[leaf] : result);
    }
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal assembled, AssembleLiteral(shards, result_shapes_[leaf],
                                                                   result_shardings_[leaf], mesh_));
    leaves.push_back(std::move(assembled));
  }
  return tuple ? ir::Literal::Tuple(std::move(leaves)) : std::move(leaves[0]);
}

}  // namespace vkspmd::exec
