// Emits the per-device program: wraps the IR builder with what partitioned code needs (the
// partition id, per-device offset tables, padding masks) and emits collectives along mesh axes,
// recording each one (kind, axes, size, bytes sent per device) for the reports.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/builder.h"
#include "src/ir/module.h"
#include "src/spmd/axis_sharding.h"
#include "src/spmd/mesh.h"

namespace vkspmd::spmd {

struct CollectiveRecord {
  ir::Opcode kind = ir::Opcode::kAllReduce;
  std::vector<int64_t> axes;  // mesh axes it runs along
  int64_t elements = 0;       // elements of each device's operand
  int64_t bytes_per_device = 0;
  std::string instruction;  // the original instruction it serves
};

// Bytes each device sends, with the usual ring algorithms (as nccl-tests' bus bandwidth counts
// them): all-reduce 2(g-1)/g B, all-gather (g-1) B, reduce-scatter and all-to-all (g-1)/g B,
// collective-permute B; B = bytes of the operand on one device, g = group size.
int64_t CollectiveBytesPerDevice(ir::Opcode kind, int64_t operand_bytes, int64_t group_size);

class SpmdBuilder {
 public:
  SpmdBuilder(ir::ComputationBuilder& builder, ir::Module& module, const Mesh& mesh)
      : builder_(builder), module_(module), mesh_(&mesh) {}

  const Mesh& mesh() const { return *mesh_; }
  // Collectives and shard geometry run over `mesh` (borrowed) from now on: another device layout
  // of the same mesh shape, while an op runs on values laid out in a device order
  // (AxisSharding::device_order); the caller sets the old mesh back.
  void set_mesh(const Mesh& mesh) { mesh_ = &mesh; }
  ir::ComputationBuilder& builder() { return builder_; }
  // Names the original instruction that the following collectives serve.
  void set_current(std::string name) { current_ = std::move(name); }
  const std::vector<CollectiveRecord>& records() const { return records_; }

  // Generic op with explicit attributes (the builder infers the shape unless `declared`).
  absl::StatusOr<ir::Instruction*> Add(ir::Opcode opcode, std::vector<ir::Instruction*> operands,
                                       ir::InstructionAttributes attributes = {},
                                       std::optional<ir::Shape> declared = std::nullopt);
  absl::StatusOr<ir::Instruction*> Scalar(ir::DType type, double value);
  absl::StatusOr<ir::Instruction*> Broadcast(ir::Instruction* scalar, const ir::Shape& shape);
  absl::StatusOr<ir::Instruction*> Reshape(ir::Instruction* value, std::vector<int64_t> dims);
  absl::StatusOr<ir::Instruction*> Transpose(ir::Instruction* value,
                                             std::vector<int64_t> permutation);
  // Static slice [0, limit) of one dim; pad with `value` at the end of one dim.
  absl::StatusOr<ir::Instruction*> SliceDim(ir::Instruction* value, int64_t dim, int64_t limit);
  absl::StatusOr<ir::Instruction*> PadDimTo(ir::Instruction* value, int64_t dim, int64_t size);
  // dynamic-slice with one s32 start per dim (nullptr: 0).
  absl::StatusOr<ir::Instruction*> DynamicSlice(ir::Instruction* value,
                                                const std::vector<ir::Instruction*>& starts,
                                                std::vector<int64_t> sizes);

  // This device's partition id as s32[].
  absl::StatusOr<ir::Instruction*> PartitionId();
  // s32[] holding by_partition[partition id] (a table lookup, cached per table).
  absl::StatusOr<ir::Instruction*> DeviceValue(const std::vector<int64_t>& by_partition);
  // pred of `shape`: index along `dim` + offset < limit, offset from DeviceValue.
  absl::StatusOr<ir::Instruction*> ValidMask(const ir::Shape& shape, int64_t dim,
                                             const std::vector<int64_t>& offset_by_partition,
                                             int64_t limit);

  // Replaces the padding of the given split dims of `local` (a shard of `global` under
  // `sharding`) by the scalar `fill` makes; dims that divide evenly need nothing and `fill` is
  // not called when no dim needs it.
  absl::StatusOr<ir::Instruction*> MaskPadding(
      ir::Instruction* local, const ir::Shape& global, const AxisSharding& sharding,
      const std::vector<int64_t>& dims,
      const std::function<absl::StatusOr<ir::Instruction*>()>& fill);

  // A scalar reducer computation in the output module (cached per op and type).
  ir::Computation* Reducer(ir::Opcode opcode, ir::DType type);

  absl::StatusOr<ir::Instruction*> AllReduce(ir::Instruction* value,
                                             const std::vector<int64_t>& axes,
                                             ir::Computation* reducer);
  absl::StatusOr<ir::Instruction*> AllGather(ir::Instruction* value, int64_t dim,
                                             const std::vector<int64_t>& axes);
  absl::StatusOr<ir::Instruction*> ReduceScatter(ir::Instruction* value, int64_t dim,
                                                 const std::vector<int64_t>& axes,
                                                 ir::Computation* reducer);
  absl::StatusOr<ir::Instruction*> AllToAll(ir::Instruction* value, int64_t dim,
                                            const std::vector<int64_t>& axes);
  absl::StatusOr<ir::Instruction*> CollectivePermute(
      ir::Instruction* value, const std::vector<std::pair<int64_t, int64_t>>& pairs,
      const std::vector<int64_t>& axes);

 private:
  absl::StatusOr<ir::Instruction*> Collective(ir::Opcode opcode, ir::Instruction* value,
                                              const std::vector<int64_t>& axes,
                                              ir::InstructionAttributes attributes);

  ir::ComputationBuilder& builder_;
  ir::Module& module_;
  const Mesh* mesh_;
  std::string current_;
  std::vector<CollectiveRecord> records_;
  ir::Instruction* partition_id_ = nullptr;
  std::map<std::vector<int64_t>, ir::Instruction*> device_values_;
  // Masks by (shape dims, dim, offsets, limit): softmax-like chains reuse one.
  std::map<std::tuple<std::vector<int64_t>, int64_t, std::vector<int64_t>, int64_t>,
           ir::Instruction*>
      masks_;
  std::map<std::pair<ir::Opcode, ir::DType>, ir::Computation*> reducers_;
  int64_t next_channel_ = 1;
};

// Runs a builder over another mesh layout for a scope (SpmdBuilder::set_mesh), then sets the
// old one back.
class ScopedMesh {
 public:
  ScopedMesh(SpmdBuilder& builder, const Mesh& mesh) : builder_(builder), old_(&builder.mesh()) {
    builder_.set_mesh(mesh);
  }
  ~ScopedMesh() { builder_.set_mesh(*old_); }
  ScopedMesh(const ScopedMesh&) = delete;
  ScopedMesh& operator=(const ScopedMesh&) = delete;

 private:
  SpmdBuilder& builder_;
  const Mesh* old_;
};

}  // namespace vkspmd::spmd
