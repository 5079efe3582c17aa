// Building the module of a sync from the trace.
#include "src/lazy/lowering.h"

#include <map>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/ir/builder.h"
#include "src/spmd/axis_sharding.h"

namespace vkspmd::lazy {
namespace {

class Lowering {
 public:
  Lowering(PlacementPtr placement, const absl::flat_hash_set<const Node*>& variables)
      : builder_("main"), variables_(variables) {
    graph_.module = std::make_unique<ir::Module>("lazy_graph");
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
    if (!graph_.placement->is_mesh) return parameter;
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
  return Lowering(std::move(placement), variables).Run(outputs);
}

}  // namespace vkspmd::lazy
