// Trace ops: broadcasting, promotion and the IR each op lowers to.
#include "src/lazy/trace_ops.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"

namespace vkspmd::lazy::trace {
namespace {

std::string DimsText(const std::vector<int64_t>& dims) {
  return absl::StrCat("[", absl::StrJoin(dims, ", "), "]");
}

ir::Literal ScalarLiteral(double value, ir::DType type) {
  ir::Literal literal(ir::Shape::Scalar(type));
  if (ir::IsFloat(type)) {
    literal.SetFromDouble(0, value);
  } else {
    literal.SetFromInt64(0, static_cast<int64_t>(value));
  }
  return literal;
}

// The identity of a reduction: 0 for sums, the lowest value for max, the highest for min.
ir::Literal ReduceInit(ir::Opcode opcode, ir::DType type) {
  ir::Literal literal(ir::Shape::Scalar(type));
  const bool is_max = opcode == ir::Opcode::kMaximum;
  if (opcode == ir::Opcode::kAdd) return literal;
  if (ir::IsFloat(type)) {
    literal.SetFromDouble(0, is_max ? -std::numeric_limits<double>::infinity()
                                    : std::numeric_limits<double>::infinity());
  } else if (type == ir::DType::kPred) {
    literal.SetFromUint64(0, is_max ? 0 : 1);
  } else if (ir::IsUnsignedInteger(type)) {
    literal.SetFromUint64(0, is_max ? 0 : std::numeric_limits<uint32_t>::max());
  } else {
    literal.SetFromInt64(
        0, is_max ? std::numeric_limits<int32_t>::min() : std::numeric_limits<int32_t>::max());
  }
  return literal;
}

NodePtr ConstantLiteral(ir::Literal literal) {
  absl::StatusOr<NodePtr> node = MakeOp(ir::Opcode::kConstant, {}, [&] {
    ir::InstructionAttributes attributes;
    attributes.literal = std::move(literal);
    return attributes;
  }());
  return *node;  // A constant's shape is its literal's: inference cannot fail.
}

}  // namespace

NodePtr Constant(double value, ir::DType type) {
  return ConstantLiteral(ScalarLiteral(value, type));
}

NodePtr ScalarParameter(double value, ir::DType type) {
  return MakeHostLeaf(ScalarLiteral(value, type));
}

absl::StatusOr<NodePtr> Convert(const NodePtr& x, ir::DType type) {
  if (x->shape().dtype() == type) return x;
  return MakeOp(ir::Opcode::kConvert, {x}, {}, ir::Shape(type, x->shape().dimensions()));
}

absl::StatusOr<NodePtr> ToFloat(const NodePtr& x) {
  return ir::IsFloat(x->shape().dtype()) ? x : Convert(x, ir::DType::kF32);
}

absl::StatusOr<std::vector<int64_t>> BroadcastShapes(const std::vector<int64_t>& a,
                                                     const std::vector<int64_t>& b,
                                                     const std::string& op) {
  const size_t rank = std::max(a.size(), b.size());
  std::vector<int64_t> result(rank);
  for (size_t i = 0; i < rank; ++i) {
    const int64_t da = i < rank - a.size() ? 1 : a[i - (rank - a.size())];
    const int64_t db = i < rank - b.size() ? 1 : b[i - (rank - b.size())];
    if (da != db && da != 1 && db != 1) {
      return absl::InvalidArgumentError(absl::StrCat(op, ": shapes ", DimsText(a), " and ",
                                                     DimsText(b), " cannot be broadcast (dim ", i,
                                                     " of the result: ", da, " vs ", db, ")"));
    }
    result[i] = da == 1 ? db : da;
  }
  return result;
}

absl::StatusOr<NodePtr> BroadcastTo(const NodePtr& x, const std::vector<int64_t>& dims) {
  const std::vector<int64_t>& from = x->shape().dimensions();
  if (from == dims) return x;
  if (from.size() > dims.size()) {
    return absl::InvalidArgumentError(absl::StrCat("cannot broadcast shape ", DimsText(from),
                                                   " to the smaller rank of ", DimsText(dims)));
  }
  // Drop the size-1 dims that grow, then map the remaining ones onto their output dims.
  const size_t offset = dims.size() - from.size();
  std::vector<int64_t> kept_dims, mapping;
  for (size_t i = 0; i < from.size(); ++i) {
    if (from[i] == dims[offset + i]) {
      kept_dims.push_back(from[i]);
      mapping.push_back(static_cast<int64_t>(offset + i));
    } else if (from[i] != 1) {
      return absl::InvalidArgumentError(absl::StrCat("cannot broadcast shape ", DimsText(from),
                                                     " to ", DimsText(dims), " (dim ", i, ")"));
    }
  }
  NodePtr operand = x;
  if (kept_dims != from) {
    VKSPMD_ASSIGN_OR_RETURN(operand, Reshape(x, kept_dims));
  }
  ir::InstructionAttributes attributes;
  attributes.dimensions = mapping;
  return MakeOp(ir::Opcode::kBroadcast, {operand}, attributes, ir::Shape(x->shape().dtype(), dims));
}

absl::StatusOr<ir::DType> PromoteTypes(ir::DType a, ir::DType b, const std::string& op) {
  if (a == b) return a;
  if (a == ir::DType::kPred) return b;
  if (b == ir::DType::kPred) return a;
  if (ir::IsFloat(a) != ir::IsFloat(b)) return ir::IsFloat(a) ? a : b;
  // Floats of different widths compute in the wider one; float16 with bfloat16 in float32 (as
  // PyTorch promotes them).
  if (ir::IsFloat(a) && ir::IsFloat(b)) {
    if (ir::DTypeByteSize(a) == ir::DTypeByteSize(b)) return ir::DType::kF32;
    return ir::DTypeByteSize(a) > ir::DTypeByteSize(b) ? a : b;
  }
  return absl::InvalidArgumentError(
      absl::StrCat(op, ": no common type for ", std::string(ir::DTypeName(a)), " and ",
                   std::string(ir::DTypeName(b)), "; convert one with to_dtype"));
}

absl::StatusOr<NodePtr> Unary(ir::Opcode opcode, const NodePtr& x) { return MakeOp(opcode, {x}); }

// Promotes both operands to one type and broadcasts them to one shape.
static absl::Status Align(NodePtr& a, NodePtr& b, const std::string& op) {
  VKSPMD_ASSIGN_OR_RETURN(ir::DType type, PromoteTypes(a->shape().dtype(), b->shape().dtype(), op));
  VKSPMD_ASSIGN_OR_RETURN(a, Convert(a, type));
  VKSPMD_ASSIGN_OR_RETURN(b, Convert(b, type));
  VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> dims,
                          BroadcastShapes(a->shape().dimensions(), b->shape().dimensions(), op));
  VKSPMD_ASSIGN_OR_RETURN(a, BroadcastTo(a, dims));
  VKSPMD_ASSIGN_OR_RETURN(b, BroadcastTo(b, dims));
  return absl::OkStatus();
}

absl::StatusOr<NodePtr> Binary(ir::Opcode opcode, NodePtr a, NodePtr b, const std::string& op) {
  VKSPMD_RETURN_IF_ERROR(Align(a, b, op));
  return MakeOp(opcode, {a, b});
}

absl::StatusOr<NodePtr> Compare(ir::ComparisonDirection direction, NodePtr a, NodePtr b,
                                const std::string& op) {
  VKSPMD_RETURN_IF_ERROR(Align(a, b, op));
  ir::InstructionAttributes attributes;
  attributes.direction = direction;
  return MakeOp(ir::Opcode::kCompare, {a, b}, attributes);
}

absl::StatusOr<NodePtr> Select(NodePtr condition, NodePtr a, NodePtr b) {
  VKSPMD_RETURN_IF_ERROR(Align(a, b, "where"));
  VKSPMD_ASSIGN_OR_RETURN(condition, Convert(condition, ir::DType::kPred));
  VKSPMD_ASSIGN_OR_RETURN(
      std::vector<int64_t> dims,
      BroadcastShapes(condition->shape().dimensions(), a->shape().dimensions(), "where"));
  VKSPMD_ASSIGN_OR_RETURN(condition, BroadcastTo(condition, dims));
  VKSPMD_ASSIGN_OR_RETURN(a, BroadcastTo(a, dims));
  VKSPMD_ASSIGN_OR_RETURN(b, BroadcastTo(b, dims));
  return MakeOp(ir::Opcode::kSelect, {condition, a, b});
}

absl::StatusOr<NodePtr> Reshape(const NodePtr& x, const std::vector<int64_t>& dims) {
  if (x->shape().dimensions() == dims) return x;
  return MakeOp(ir::Opcode::kReshape, {x}, {}, ir::Shape(x->shape().dtype(), dims));
}

absl::StatusOr<NodePtr> Transpose(const NodePtr& x, const std::vector<int64_t>& permutation) {
  std::vector<int64_t> identity(permutation.size());
  std::iota(identity.begin(), identity.end(), 0);
  if (permutation == identity) return x;
  ir::InstructionAttributes attributes;
  attributes.dimensions = permutation;
  return MakeOp(ir::Opcode::kTranspose, {x}, attributes);
}

absl::StatusOr<NodePtr> Slice(const NodePtr& x, int64_t dim, int64_t start, int64_t end,
                              int64_t step) {
  ir::InstructionAttributes attributes;
  for (int64_t d = 0; d < x->shape().rank(); ++d) {
    attributes.slice.push_back({0, x->shape().dimension(d), 1});
  }
  attributes.slice[dim] = {start, end, step};
  return MakeOp(ir::Opcode::kSlice, {x}, attributes);
}

absl::StatusOr<NodePtr> Concatenate(const std::vector<NodePtr>& parts, int64_t dim) {
  if (parts.size() == 1) return parts[0];
  ir::InstructionAttributes attributes;
  attributes.dimensions = {dim};
  return MakeOp(ir::Opcode::kConcatenate, parts, attributes);
}

absl::StatusOr<NodePtr> Iota(ir::DType type, const std::vector<int64_t>& dims, int64_t dim) {
  ir::InstructionAttributes attributes;
  attributes.iota_dimension = dim;
  return MakeOp(ir::Opcode::kIota, {}, attributes, ir::Shape(type, dims));
}

absl::StatusOr<NodePtr> Reduce(const NodePtr& x, const std::vector<int64_t>& dims,
                               ir::Opcode opcode, bool keepdim) {
  const ir::DType type = x->shape().dtype();
  ir::InstructionAttributes attributes;
  attributes.dimensions = dims;
  attributes.to_apply = TraceReducer(opcode, type);
  VKSPMD_ASSIGN_OR_RETURN(
      NodePtr reduced,
      MakeOp(ir::Opcode::kReduce, {x, ConstantLiteral(ReduceInit(opcode, type))}, attributes));
  if (!keepdim) return reduced;
  std::vector<int64_t> kept = x->shape().dimensions();
  for (int64_t d : dims) kept[d] = 1;
  return Reshape(reduced, kept);
}

absl::StatusOr<NodePtr> Matmul(const NodePtr& a, const NodePtr& b) {
  const std::vector<int64_t>& da = a->shape().dimensions();
  const std::vector<int64_t>& db = b->shape().dimensions();
  if (da.empty() || db.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: both operands need a dim; got ",
                                                   DimsText(da), " and ", DimsText(db)));
  }
  const int64_t k_a = da.back(), k_b = db.size() == 1 ? db[0] : db[db.size() - 2];
  if (k_a != k_b) {
    return absl::InvalidArgumentError(absl::StrCat("matmul: shapes ", DimsText(da), " and ",
                                                   DimsText(db), " cannot be multiplied (", k_a,
                                                   " != ", k_b, ")"));
  }
  VKSPMD_ASSIGN_OR_RETURN(ir::DType type,
                          PromoteTypes(a->shape().dtype(), b->shape().dtype(), "matmul"));
  VKSPMD_ASSIGN_OR_RETURN(NodePtr lhs, Convert(a, type));
  VKSPMD_ASSIGN_OR_RETURN(NodePtr rhs, Convert(b, type));
  // Vectors become matrices ([k] -> [1, k] on the left, [k, 1] on the right) and go again.
  if (da.size() == 1 || db.size() == 1) {
    if (da.size() == 1) {
      VKSPMD_ASSIGN_OR_RETURN(lhs, Reshape(lhs, {1, k_a}));
    }
    if (db.size() == 1) {
      VKSPMD_ASSIGN_OR_RETURN(rhs, Reshape(rhs, {k_b, 1}));
    }
    VKSPMD_ASSIGN_OR_RETURN(NodePtr product, Matmul(lhs, rhs));
    std::vector<int64_t> dims = product->shape().dimensions();
    if (db.size() == 1) dims.erase(dims.end() - 1);
    if (da.size() == 1) dims.erase(dims.end() - (db.size() == 1 ? 1 : 2));
    return Reshape(product, dims);
  }
  // A 2-D right operand: fold the left operand's batch dims into its rows (one plain dot).
  if (db.size() == 2 && da.size() > 2) {
    std::vector<int64_t> out(da.begin(), da.end() - 1);
    out.push_back(db[1]);
    VKSPMD_ASSIGN_OR_RETURN(lhs, Reshape(lhs, {ir::Product(out) / db[1], k_a}));
    VKSPMD_ASSIGN_OR_RETURN(NodePtr product, Matmul(lhs, rhs));
    return Reshape(product, out);
  }
  std::vector<int64_t> batch_a(da.begin(), da.end() - 2), batch_b(db.begin(), db.end() - 2);
  VKSPMD_ASSIGN_OR_RETURN(std::vector<int64_t> batch, BroadcastShapes(batch_a, batch_b, "matmul"));
  std::vector<int64_t> lhs_dims = batch, rhs_dims = batch;
  lhs_dims.insert(lhs_dims.end(), da.end() - 2, da.end());
  rhs_dims.insert(rhs_dims.end(), db.end() - 2, db.end());
  VKSPMD_ASSIGN_OR_RETURN(lhs, BroadcastTo(lhs, lhs_dims));
  VKSPMD_ASSIGN_OR_RETURN(rhs, BroadcastTo(rhs, rhs_dims));
  const int64_t rank = static_cast<int64_t>(batch.size());
  ir::InstructionAttributes attributes;
  for (int64_t d = 0; d < rank; ++d) {
    attributes.dot.lhs_batch.push_back(d);
    attributes.dot.rhs_batch.push_back(d);
  }
  attributes.dot.lhs_contracting = {rank + 1};
  attributes.dot.rhs_contracting = {rank};
  return MakeOp(ir::Opcode::kDot, {lhs, rhs}, attributes);
}

absl::StatusOr<NodePtr> ShardingConstraint(const NodePtr& x, const ir::Sharding& sharding,
                                           PlacementPtr placement) {
  if (x->placement != nullptr && !SamePlacement(x->placement, placement)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "mark_sharding: the value is computed on mesh ", x->placement->mesh.ToString(), ", not on ",
        placement->mesh.ToString(), "; sync it first so its data can move"));
  }
  ir::InstructionAttributes attributes;
  attributes.custom_call_target = "Sharding";
  VKSPMD_ASSIGN_OR_RETURN(NodePtr node, MakeOp(ir::Opcode::kCustomCall, {x}, attributes));
  node->proto->set_sharding(sharding);
  node->placement = std::move(placement);
  return node;
}

}  // namespace vkspmd::lazy::trace
