// Building the module of a sync from the trace.
#include "src/lazy/lowering.h"

#include <atomic>
#include <cstring>
#include <map>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/ir/builder.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::lazy {
namespace {

std::atomic<int64_t> lowering_count{0};

// Two 64-bit multiply-xorshift streams with different constants: a 128-bit key, so that two
// different graphs sharing a cached module is not a practical possibility.
class Hasher {
 public:
  void Add(uint64_t value) {
    a_ = (a_ ^ value) * 0x9e3779b97f4a7c15ull;
    a_ ^= a_ >> 29;
    b_ = (b_ + value + 0x632be59bd9b4e019ull) * 0xc2b2ae3d27d4eb4full;
    b_ ^= b_ >> 31;
  }
  void AddInts(const std::vector<int64_t>& values) {
    Add(values.size());
    for (int64_t value : values) Add(static_cast<uint64_t>(value));
  }
  void AddBytes(const void* data, size_t size) {
    Add(size);
    const auto* bytes = static_cast<const unsigned char*>(data);
    size_t k = 0;
    for (; k + 8 <= size; k += 8) {
      uint64_t word;
      std::memcpy(&word, bytes + k, 8);
      Add(word);
    }
    uint64_t tail = 0;
    std::memcpy(&tail, bytes + k, size - k);
    Add(tail);
  }
  void AddString(const std::string& text) { AddBytes(text.data(), text.size()); }
  void AddShape(const ir::Shape& shape) {
    Add(shape.IsTuple());
    if (shape.IsTuple()) {
      Add(shape.tuple_elements().size());
      for (const ir::Shape& element : shape.tuple_elements()) AddShape(element);
      return;
    }
    Add(static_cast<uint64_t>(shape.dtype()));
    AddInts(shape.dimensions());
  }
  void AddLiteral(const ir::Literal& literal) {
    AddShape(literal.shape());
    AddBytes(literal.bytes().data(), literal.bytes().size());
    Add(literal.tuple_elements().size());
    for (const ir::Literal& element : literal.tuple_elements()) AddLiteral(element);
  }
  uint64_t a() const { return a_; }
  uint64_t b() const { return b_; }

 private:
  uint64_t a_ = 0x243f6a8885a308d3ull;
  uint64_t b_ = 0x13198a2e03707344ull;
};

}  // namespace

// Everything LowerNode copies from an op node's proto into the module.
void HashOp(Node& node) {
  const ir::Instruction& proto = *node.proto;
  const ir::InstructionAttributes& a = proto.attributes();
  Hasher h;
  h.Add(static_cast<uint64_t>(proto.opcode()));
  h.AddShape(proto.shape());
  h.Add(proto.sharding().has_value());
  if (proto.sharding().has_value()) h.AddString(proto.sharding()->ToString());
  h.Add(static_cast<uint64_t>(a.parameter_number));
  h.Add(a.literal.has_value());
  if (a.literal.has_value()) h.AddLiteral(*a.literal);
  h.AddInts(a.dimensions);
  h.Add(static_cast<uint64_t>(a.iota_dimension));
  h.Add(static_cast<uint64_t>(a.tuple_index));
  h.Add(a.slice.size());
  for (const ir::SliceDimension& d : a.slice) {
    h.Add(static_cast<uint64_t>(d.start));
    h.Add(static_cast<uint64_t>(d.limit));
    h.Add(static_cast<uint64_t>(d.stride));
  }
  h.AddInts(a.dynamic_slice_sizes);
  h.Add(a.padding.size());
  for (const ir::PaddingDimension& d : a.padding) {
    h.Add(static_cast<uint64_t>(d.low));
    h.Add(static_cast<uint64_t>(d.high));
    h.Add(static_cast<uint64_t>(d.interior));
  }
  h.AddInts(a.dot.lhs_batch);
  h.AddInts(a.dot.rhs_batch);
  h.AddInts(a.dot.lhs_contracting);
  h.AddInts(a.dot.rhs_contracting);
  h.Add(static_cast<uint64_t>(a.direction));
  // The lowering rebuilds the reducer from its root opcode and the op's element type.
  h.Add(a.to_apply == nullptr ? ~0ull : static_cast<uint64_t>(a.to_apply->root()->opcode()));
  const bool has_groups = !a.replica_groups.groups.empty() || a.replica_groups.iota.has_value();
  h.Add(has_groups);
  if (has_groups) h.AddString(a.replica_groups.ToString());
  h.Add(a.channel_id.has_value());
  h.Add(static_cast<uint64_t>(a.channel_id.value_or(0)));
  h.Add(a.use_global_device_ids);
  h.Add(a.source_target_pairs.size());
  for (const auto& [source, target] : a.source_target_pairs) {
    h.Add(static_cast<uint64_t>(source));
    h.Add(static_cast<uint64_t>(target));
  }
  h.AddString(a.custom_call_target);
  h.Add(static_cast<uint64_t>(a.rng_algorithm));
  h.Add(static_cast<uint64_t>(a.exponent_bits));
  h.Add(static_cast<uint64_t>(a.mantissa_bits));
  const ir::GatherDimensions& g = a.gather;
  h.AddInts(g.offset_dims);
  h.AddInts(g.collapsed_slice_dims);
  h.AddInts(g.start_index_map);
  h.AddInts(g.operand_batching_dims);
  h.AddInts(g.start_indices_batching_dims);
  h.Add(static_cast<uint64_t>(g.index_vector_dim));
  h.AddInts(g.slice_sizes);
  h.Add(g.indices_are_sorted);
  h.Add(g.unique_indices);
  h.Add(a.is_stable);
  h.Add(a.total_order);
  h.AddInts(a.unspecified_dims);
  // Called computations (other than reducers, hashed by their opcode above) are never set by
  // the lazy trace today, and LowerNode copies no called body into the module: hashing them by
  // address is only a guard (a freed computation's reused address could collide), so an op
  // that calls one must lower its body into the module and hash the body's structure instead.
  h.Add(a.called.size());
  for (const ir::Computation* called : a.called) h.Add(reinterpret_cast<uintptr_t>(called));
  h.Add(a.known_trip_count.has_value());
  h.Add(static_cast<uint64_t>(a.known_trip_count.value_or(0)));
  node.op_hash[0] = h.a();
  node.op_hash[1] = h.b();
  node.op_hashed = true;
}

namespace {

class Lowering {
 public:
  Lowering(PlacementPtr placement, const absl::flat_hash_set<const Node*>& variables)
      : builder_("main", {1, placement->is_mesh ? placement->mesh.device_count() : 1}),
        variables_(variables) {
    graph_.module = std::make_unique<ir::Module>("lazy_graph");
    // Collectives of manual regions name partition ids, and their gradients need the count.
    if (placement->is_mesh) graph_.module->set_partition_count(placement->mesh.device_count());
    graph_.placement = std::move(placement);
  }

  absl::StatusOr<LoweredGraph> Run(const std::vector<NodePtr>& outputs) {
    std::vector<ir::Instruction*> roots;
    for (const NodePtr& output : outputs) {
      VKSPMD_ASSIGN_OR_RETURN(ir::Instruction * root, Visit(output));
      roots.push_back(root);
      graph_.outputs.push_back(output);
    }
    ir::Instruction* root = roots.size() == 1 ? roots[0] : nullptr;
    if (root == nullptr) {
      VKSPMD_ASSIGN_OR_RETURN(root, builder_.Tuple(roots));
    }
    ir::Computation* entry = graph_.module->AddComputation(builder_.Build(root));
    graph_.module->set_entry(entry);
    return std::move(graph_);
  }

 private:
  // Post-order over the not yet lowered part of the trace, without recursion (traces are deep).
  absl::StatusOr<ir::Instruction*> Visit(const NodePtr& start) {
    std::vector<std::pair<Node*, size_t>> stack{{start.get(), 0}};
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (lowered_.contains(node)) {
        stack.pop_back();
        continue;
      }
      if (!IsParameter(*node) && next < node->operands.size()) {
        Node* operand = node->operands[next++].get();
        if (!lowered_.contains(operand)) stack.push_back({operand, 0});
        continue;
      }
      VKSPMD_ASSIGN_OR_RETURN(ir::Instruction * instruction, LowerNode(*node));
      lowered_[node] = instruction;
      graph_.instructions[node] = instruction;
      stack.pop_back();
    }
    return lowered_.at(start.get());
  }

  absl::StatusOr<ir::Instruction*> LowerNode(Node& node) {
    if (IsParameter(node)) return LowerParameter(node);
    const ir::Instruction& proto = *node.proto;
    std::vector<ir::Instruction*> operands;
    for (const NodePtr& operand : node.operands) operands.push_back(lowered_.at(operand.get()));
    if (proto.opcode() == ir::Opcode::kCustomCall && !graph_.placement->is_mesh) {
      return operands[0];  // A sharding constraint means nothing on one device.
    }
    ir::InstructionAttributes attributes = proto.attributes();
    if (attributes.to_apply != nullptr) {
      attributes.to_apply = Reducer(attributes.to_apply->root()->opcode(), proto.shape().dtype());
    }
    VKSPMD_ASSIGN_OR_RETURN(ir::Instruction * instruction,
                            builder_.Add(proto.opcode(), operands, attributes, proto.shape()));
    instruction->set_sharding(proto.sharding());
    return instruction;
  }

  absl::StatusOr<ir::Instruction*> LowerParameter(Node& node) {
    const int64_t number = static_cast<int64_t>(graph_.parameters.size());
    ir::Instruction* parameter = builder_.Parameter(number, node.shape());
    graph_.parameters.push_back(node.shared_from_this());
    if (!graph_.placement->is_mesh || node.free_sharding) return parameter;
    // Host data (and scalars) go to every device, as PyTorch/XLA does with unmarked data, so the
    // next step, which reads it as device data, builds the same module.
    if (node.host_value.has_value() &&
        (node.device_value == nullptr || node.device_value->Failed())) {
      parameter->set_sharding(ir::Sharding::Replicated());
    } else if (node.device_value != nullptr &&
               SamePlacement(node.device_value->placement(), graph_.placement)) {
      VKSPMD_ASSIGN_OR_RETURN(spmd::AxisSharding sharding, node.device_value->WaitSharding());
      parameter->set_sharding(spmd::ToHloSharding(sharding, graph_.placement->local_mesh));
    }
    return parameter;
  }

  bool IsParameter(const Node& node) const { return node.is_leaf() || variables_.contains(&node); }

  ir::Computation* Reducer(ir::Opcode opcode, ir::DType type) {
    ir::Computation*& reducer = reducers_[{opcode, type}];
    if (reducer == nullptr) {
      reducer = graph_.module->AddComputation(ir::MakeScalarReducer(
          absl::StrCat(std::string(ir::OpcodeName(opcode)), "_", std::string(ir::DTypeName(type))),
          opcode, type));
    }
    return reducer;
  }

  ir::ComputationBuilder builder_;
  const absl::flat_hash_set<const Node*>& variables_;
  LoweredGraph graph_;
  std::map<const Node*, ir::Instruction*> lowered_;
  std::map<std::pair<ir::Opcode, ir::DType>, ir::Computation*> reducers_;
};

}  // namespace

absl::StatusOr<LoweredGraph> Lower(const std::vector<NodePtr>& outputs, PlacementPtr placement,
                                   const absl::flat_hash_set<const Node*>& variables) {
  lowering_count.fetch_add(1, std::memory_order_relaxed);
  return Lowering(std::move(placement), variables).Run(outputs);
}

int64_t LoweringCount() { return lowering_count.load(std::memory_order_relaxed); }

// The same traversal as Lowering::Visit, so positions and parameter numbers match the module
// Lower would build.
absl::StatusOr<GraphSignature> Signature(const std::vector<NodePtr>& outputs,
                                         const Placement& placement,
                                         const absl::flat_hash_set<const Node*>& variables) {
  GraphSignature signature;
  Hasher h;
  h.AddString(placement.key);
  h.Add(placement.is_mesh);
  // Nodes met in this traversal carry its epoch and their position (callers hold the trace's
  // mutex, so no other traversal marks them meanwhile): no map from nodes to positions.
  static std::atomic<uint64_t> epochs{0};
  const uint64_t epoch = epochs.fetch_add(1, std::memory_order_relaxed) + 1;
  auto seen = [epoch](const Node* node) { return node->signature_epoch == epoch; };
  signature.nodes.reserve(1024);
  auto is_parameter = [&](const Node* node) {
    return node->is_leaf() || (!variables.empty() && variables.contains(node));
  };
  std::vector<std::pair<Node*, size_t>> stack;
  for (const NodePtr& output : outputs) {
    stack.push_back({output.get(), 0});
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (seen(node)) {
        stack.pop_back();
        continue;
      }
      const bool parameter = is_parameter(node);
      if (!parameter && next < node->operands.size()) {
        Node* operand = node->operands[next++].get();
        if (!seen(operand)) stack.push_back({operand, 0});
        continue;
      }
      if (parameter) {
        // Mirrors LowerParameter: shape, and on a mesh the sharding annotation it gets.
        h.Add(0x1eaf);
        h.AddShape(node->shape());
        if (placement.is_mesh && node->free_sharding) {
          h.Add(4);  // No annotation: auto-sharding places it.
        } else if (placement.is_mesh) {
          const bool failed = node->device_value != nullptr && node->device_value->Failed();
          if (node->host_value.has_value() && (node->device_value == nullptr || failed)) {
            h.Add(1);  // Replicated.
          } else if (node->device_value != nullptr &&
                     node->device_value->placement()->key == placement.key) {
            VKSPMD_ASSIGN_OR_RETURN(spmd::AxisSharding sharding,
                                    node->device_value->WaitSharding());
            h.Add(2);
            h.Add(sharding.dims.size());
            for (const std::vector<int64_t>& axes : sharding.dims) h.AddInts(axes);
            h.Add(sharding.maximal_device.has_value());
            h.Add(static_cast<uint64_t>(sharding.maximal_device.value_or(0)));
            h.Add(sharding.manual);
          } else {
            h.Add(3);  // No annotation.
          }
        }
        signature.parameters.push_back(node->shared_from_this());
      } else {
        if (!node->op_hashed) HashOp(*node);
        h.Add(node->op_hash[0]);
        h.Add(node->op_hash[1]);
        h.Add(node->operands.size());
        for (const NodePtr& operand : node->operands) h.Add(operand->signature_position);
      }
      node->signature_epoch = epoch;
      node->signature_position = signature.nodes.size();
      signature.nodes.push_back(node);
      stack.pop_back();
    }
  }
  h.Add(0x0a7);
  h.Add(outputs.size());
  for (const NodePtr& output : outputs) h.Add(output->signature_position);
  signature.hash[0] = h.a();
  signature.hash[1] = h.b();
  return signature;
}

}  // namespace vkspmd::lazy
