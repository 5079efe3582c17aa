// Creating trace nodes with trace-time shape inference.
#include "src/lazy/node.h"

#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/ir/builder.h"
#include "src/ir/shape_inference.h"

namespace vkspmd::lazy {

Node::~Node() {
  std::vector<NodePtr> pending = std::move(operands);
  while (!pending.empty()) {
    NodePtr node = std::move(pending.back());
    pending.pop_back();
    // The last owner takes the node's operands before the node goes, so its destructor finds
    // none and the chain unwinds in this loop instead of on the stack. Nodes are never reached
    // through weak pointers, so a count of one cannot rise while this runs.
    if (node != nullptr && node.use_count() == 1) {
      for (NodePtr& operand : node->operands) pending.push_back(std::move(operand));
      node->operands.clear();
    }
  }
}

void Node::Materialize(std::shared_ptr<DeviceValue> value) {
  device_value = std::move(value);
  operands.clear();
  if (region_entry != this) region_entry = nullptr;  // it may go with the operands
}

namespace {

// A node of `opcode` over `operands` with the operands' mesh and manual region, its proto of
// `shape`; the operands are not yet attached (see MakeOp). Operands on different meshes are an
// error.
absl::StatusOr<NodePtr> NewOpNode(ir::Opcode opcode, const std::vector<NodePtr>& operands,
                                  ir::InstructionAttributes attributes, ir::Shape shape) {
  auto node = std::make_shared<Node>();
  std::vector<ir::Instruction*> operand_protos;
  operand_protos.reserve(operands.size());
  for (const NodePtr& operand : operands) {
    operand_protos.push_back(operand->proto.get());
    if (operand->manual && !node->manual) node->region_entry = operand->region_entry;
    node->manual = node->manual || operand->manual;
    if (operand->placement == nullptr) continue;
    if (node->placement != nullptr && !SamePlacement(node->placement, operand->placement)) {
      return absl::InvalidArgumentError(absl::StrCat(
          std::string(ir::OpcodeName(opcode)), ": operands live on different meshes (",
          node->placement->mesh.ToString(), " and ", operand->placement->mesh.ToString(),
          "); move one with mark_sharding first"));
    }
    node->placement = operand->placement;
  }
  node->proto =
      std::make_unique<ir::Instruction>(opcode, std::move(shape), std::move(operand_protos));
  node->proto->set_attributes(std::move(attributes));
  if (opcode == ir::Opcode::kCustomCall) {
    const std::string& target = node->proto->attributes().custom_call_target;
    if (target == "SPMDFullToShardShape") {
      node->manual = true;
      node->region_entry = node.get();
    }
    if (target == "SPMDShardToFullShape") {
      node->manual = false;
      node->region_entry = nullptr;
    }
  }
  return node;
}

}  // namespace

absl::StatusOr<NodePtr> MakeOp(ir::Opcode opcode, std::vector<NodePtr> operands,
                               ir::InstructionAttributes attributes,
                               std::optional<ir::Shape> declared) {
  VKSPMD_ASSIGN_OR_RETURN(NodePtr node, NewOpNode(opcode, operands, std::move(attributes),
                                                  declared.value_or(ir::Shape())));
  // Collectives name partition ids of the mesh: their groups are checked against its size.
  ir::ShapeInferenceContext context;
  if (node->placement != nullptr) context.partition_count = node->placement->mesh.device_count();
  absl::StatusOr<ir::Shape> shape = ir::InferShape(*node->proto, context);
  if (!shape.ok()) {
    std::vector<std::string> operand_shapes;
    for (const NodePtr& operand : operands) operand_shapes.push_back(operand->shape().ToString());
    return absl::InvalidArgumentError(absl::StrCat(std::string(ir::OpcodeName(opcode)), " of (",
                                                   absl::StrJoin(operand_shapes, ", "),
                                                   "): ", shape.status().message()));
  }
  node->proto->set_shape(*std::move(shape));
  node->operands = std::move(operands);
  return node;
}

absl::StatusOr<NodePtr> MakeKnownOp(ir::Opcode opcode, std::vector<NodePtr> operands,
                                    ir::InstructionAttributes attributes, ir::Shape shape) {
  VKSPMD_ASSIGN_OR_RETURN(NodePtr node,
                          NewOpNode(opcode, operands, std::move(attributes), std::move(shape)));
  node->operands = std::move(operands);
  return node;
}

NodePtr MakeHostLeaf(ir::Literal value) {
  auto node = std::make_shared<Node>();
  node->proto = std::make_unique<ir::Instruction>(ir::Opcode::kParameter, value.shape(),
                                                  std::vector<ir::Instruction*>{});
  node->host_value = std::move(value);
  return node;
}

NodePtr MakeDeviceLeaf(std::shared_ptr<DeviceValue> value) {
  auto node = std::make_shared<Node>();
  node->proto = std::make_unique<ir::Instruction>(ir::Opcode::kParameter, value->shape(),
                                                  std::vector<ir::Instruction*>{});
  if (value->placement()->is_mesh) node->placement = value->placement();
  node->device_value = std::move(value);
  return node;
}

ir::Computation* TraceReducer(ir::Opcode opcode, ir::DType type) {
  static std::mutex mutex;
  static auto* reducers =
      new std::map<std::pair<ir::Opcode, ir::DType>, std::unique_ptr<ir::Computation>>();
  std::lock_guard<std::mutex> lock(mutex);
  std::unique_ptr<ir::Computation>& reducer = (*reducers)[{opcode, type}];
  if (reducer == nullptr) {
    reducer = ir::MakeScalarReducer(
        absl::StrCat(std::string(ir::OpcodeName(opcode)), "_", std::string(ir::DTypeName(type))),
        opcode, type);
  }
  return reducer.get();
}

std::string ShapeText(const NodePtr& node) { return node->shape().ToString(); }

}  // namespace vkspmd::lazy
