// Node: one value of the lazy trace. An op node holds a prototype instruction (opcode, attributes
// and the shape inferred at trace time, operands pointing at its operands' prototypes); a leaf
// holds host data waiting for upload or a value on the devices. Nodes never change value: when a
// node has been computed it becomes a leaf holding its DeviceValue, drops its operands (so a long
// training loop does not keep every step's graph alive), and later graphs read it as a parameter.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "src/ir/instruction.h"
#include "src/ir/literal.h"
#include "src/lazy/device_value.h"
#include "src/lazy/placement.h"

namespace vkspmd::lazy {

struct Node;
using NodePtr = std::shared_ptr<Node>;

struct Node : std::enable_shared_from_this<Node> {
  // Its operand pointers are read only by shape inference when the node is made: they dangle
  // once the operands are gone.
  std::unique_ptr<ir::Instruction> proto;
  std::vector<NodePtr> operands;
  // The mesh the value is computed on; null for single-device values (device 0).
  PlacementPtr placement;
  // Inside a manual region (after SPMDFullToShardShape, before SPMDShardToFullShape): the shape
  // is one device's shard and the value differs per device, so it is never a graph output.
  bool manual = false;
  // A manual node's region entry: the SPMDFullToShardShape (or axis_index's partition-id) whose
  // sharding says which mesh axes the region is manual over. Set when the node is made, from its
  // first manual operand's (the entry is reached through operands the node holds, so it lives as
  // long as they do; Materialize, which drops them, clears it), so a region's axes are found in
  // O(1) rather than by a walk back per call. Null outside regions, and for a manual node whose
  // manual operands lead to no entry.
  const Node* region_entry = nullptr;
  // A leaf whose sharding auto-sharding chooses (vkspmd::auto_shard): lowered without a sharding
  // annotation, so the ILP places it; the graph's run moves the data there.
  bool free_sharding = false;
  std::optional<ir::Literal> host_value;
  std::shared_ptr<DeviceValue> device_value;
  // Hash of the op (opcode, shape, attributes, sharding constraint), computed by the first
  // Signature that meets it: the proto is complete by then and never changes afterwards.
  bool op_hashed = false;
  uint64_t op_hash[2] = {0, 0};
  // Signature's marks: the traversal that last met the node and the node's position in it.
  uint64_t signature_epoch = 0;
  uint64_t signature_position = 0;

  Node() = default;
  Node(const Node&) = delete;
  Node& operator=(const Node&) = delete;
  // Releases the operands iteratively: a trace is a chain of nodes as long as the program (a
  // training loop traced without a sync holds hundreds of thousands), and dropping the last
  // reference to its end would otherwise recurse once per node and overflow the stack.
  ~Node();

  const ir::Shape& shape() const { return proto->shape(); }
  bool is_leaf() const { return host_value.has_value() || device_value != nullptr; }
  // Turns a computed op node into a leaf holding `value`.
  void Materialize(std::shared_ptr<DeviceValue> value);
};

// An op node; its shape is inferred (or checked against `declared`) now, so shape errors surface
// at the call. Operands on different meshes are an error. The node is manual when an operand is,
// or when it is SPMDFullToShardShape (SPMDShardToFullShape leaves the region).
absl::StatusOr<NodePtr> MakeOp(ir::Opcode opcode, std::vector<NodePtr> operands,
                               ir::InstructionAttributes attributes = {},
                               std::optional<ir::Shape> declared = std::nullopt);
// MakeOp without shape inference, for an op known to be valid with `shape`: a replay of one that
// MakeOp accepted over operands of the same shapes and meshes (autodiff's cached gradients).
absl::StatusOr<NodePtr> MakeKnownOp(ir::Opcode opcode, std::vector<NodePtr> operands,
                                    ir::InstructionAttributes attributes, ir::Shape shape);
NodePtr MakeHostLeaf(ir::Literal value);
NodePtr MakeDeviceLeaf(std::shared_ptr<DeviceValue> value);

// The scalar reducer (a, b) -> a OP b of `type` that reduce nodes point at while tracing; the
// lowering gives each module its own copy.
ir::Computation* TraceReducer(ir::Opcode opcode, ir::DType type);

// "f32[8,4]" for messages.
std::string ShapeText(const NodePtr& node);

}  // namespace vkspmd::lazy
