// Gather and scatter GLSL (see gather_scatter_code.h). Coordinates follow XLA's semantics as the
// reference evaluator does (src/interp/gather_scatter.cc): gather clamps each start, scatter skips
// an update whose window does not fit.
#include "src/codegen/gather_scatter_code.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/base/status_macros.h"
#include "src/codegen/glsl_types.h"
#include "src/codegen/planner.h"
#include "src/codegen/reduction_code.h"
#include "src/ir/gather_attributes.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;

// Row-major linear index of `coordinates` (GLSL uint expressions) in `dimensions`.
std::string LinearIndex(const std::vector<int64_t>& dimensions,
                        const std::vector<std::string>& coordinates) {
  const std::vector<int64_t> strides = ir::RowMajorStrides(dimensions);
  std::vector<std::string> terms = {"0u"};
  for (size_t d = 0; d < coordinates.size(); ++d) {
    terms.push_back(absl::StrCat("(", coordinates[d], ") * ", strides[d], "u"));
  }
  return absl::StrJoin(terms, " + ");
}

// `value` (an index of `type`) as an int, saturated rather than wrapped: dims are below 2^31, so
// clamping the saturated value, or checking it against the bounds, decides as the exact one
// would. A plain int() turned a u32 of 2^31 or more negative and dropped a 64-bit one's high bits.
std::string SaturatedInt(ir::DType type, const std::string& value) {
  switch (type) {
    case ir::DType::kU32:
      return absl::StrCat("int(min(", value, ", 2147483647u))");
    case ir::DType::kU64:
      return absl::StrCat("int(min(", value, ", uint64_t(2147483647u)))");
    case ir::DType::kS64:
      return absl::StrCat("int(clamp(", value, ", int64_t(-2147483647), int64_t(2147483647)))");
    default:
      return absl::StrCat("int(", value, ")");
  }
}

// Declares `int <prefix>d` for every operand dim d: the start that the index vector at the batch
// position `batch` (GLSL coordinates, one per indices batch dim) names, unclamped (saturated to
// int's range).
absl::StatusOr<std::string> StartCode(const Instruction& instruction, KernelWriter& writer,
                                      const std::vector<std::string>& batch,
                                      const std::string& prefix) {
  const ir::GatherDimensions& dims = instruction.attributes().gather;
  const Instruction* indices = instruction.operand(1);
  const int64_t rank = instruction.operand(0)->shape().rank();
  const ir::GatherIndexSpaces spaces = ir::DescribeGather(
      dims, rank, indices->shape(),
      instruction.opcode() == ir::Opcode::kGather ? instruction.shape().rank()
                                                  : instruction.operand(2)->shape().rank());
  std::vector<std::string> position(indices->shape().rank(), "0u");
  for (size_t j = 0; j < spaces.indices_batch.size(); ++j) {
    position[spaces.indices_batch[j]] = batch[j];
  }
  std::vector<std::string> starts(rank, "0");
  VKSPMD_ASSIGN_OR_RETURN(std::string read, writer.Value(indices));
  for (int64_t k = 0; k < spaces.index_vector_size; ++k) {
    if (spaces.explicit_index_vector) position[dims.index_vector_dim] = absl::StrCat(k, "u");
    starts[dims.start_index_map[k]] = SaturatedInt(
        indices->shape().dtype(),
        absl::StrCat(read, "(", LinearIndex(indices->shape().dimensions(), position), ")"));
  }
  for (size_t b = 0; b < dims.operand_batching_dims.size(); ++b) {
    starts[dims.operand_batching_dims[b]] =
        absl::StrCat("int(", position[dims.start_indices_batching_dims[b]], ")");
  }
  std::string code;
  for (int64_t d = 0; d < rank; ++d) {
    absl::StrAppend(&code, "  int ", prefix, d, " = ", starts[d], ";\n");
  }
  return code;
}

}  // namespace

absl::StatusOr<std::string> GatherCode(const Instruction& gather, KernelWriter& writer) {
  const ir::GatherDimensions& dims = gather.attributes().gather;
  const Instruction* operand = gather.operand(0);
  const std::vector<int64_t>& out = gather.shape().dimensions();
  const ir::GatherIndexSpaces spaces = ir::DescribeGather(
      dims, operand->shape().rank(), gather.operand(1)->shape(), gather.shape().rank());
  std::string code = KernelWriter::Coordinates("c", "i", out);
  std::vector<std::string> batch;
  for (int64_t d : spaces.result_batch) batch.push_back(absl::StrCat("c", d));
  VKSPMD_ASSIGN_OR_RETURN(std::string starts, StartCode(gather, writer, batch, "s"));
  absl::StrAppend(&code, starts);
  std::vector<std::string> coordinates;
  for (int64_t d = 0; d < operand->shape().rank(); ++d) {
    coordinates.push_back(absl::StrCat("uint(clamp(s", d, ", 0, ",
                                       operand->shape().dimension(d) - dims.slice_sizes[d], "))"));
  }
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    absl::StrAppend(&coordinates[spaces.operand_window[w]], " + c", dims.offset_dims[w]);
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string read, writer.Value(operand));
  return absl::StrCat(code, "  return ", read, "(",
                      LinearIndex(operand->shape().dimensions(), coordinates), ");\n");
}

absl::StatusOr<std::string> ScatterCode(const Instruction& scatter, KernelWriter& writer) {
  const ir::GatherDimensions& dims = scatter.attributes().gather;
  const Instruction* operand = scatter.operand(0);
  const Instruction* updates = scatter.operand(2);
  const std::vector<int64_t>& out = operand->shape().dimensions();
  const int64_t rank = operand->shape().rank();
  const ir::GatherIndexSpaces spaces =
      ir::DescribeGather(dims, rank, scatter.operand(1)->shape(), updates->shape().rank());
  std::vector<int64_t> positions_shape;
  for (int64_t d : spaces.result_batch) positions_shape.push_back(updates->shape().dimension(d));
  int64_t positions = 1;
  for (int64_t size : positions_shape) positions *= size;
  if (positions > kMaxElementsPerInvocation) {
    return absl::UnimplementedError(absl::StrCat(
        "the device compiler applies at most ", kMaxElementsPerInvocation,
        " scatter indices per scatter (each output element loops over them); ", scatter.Describe(),
        " has ", positions, " (updates ", updates->shape().ToString(), ")"));
  }
  const ir::Computation& combiner = *scatter.attributes().to_apply;
  std::string combine;
  if (combiner.root()->opcode() == ir::Opcode::kParameter) {
    combine.assign(1, combiner.root() == combiner.parameter(1) ? 'b' : 'a');
  } else {
    VKSPMD_ASSIGN_OR_RETURN(combine, CombinerCode(scatter));
  }
  const ir::DType type = scatter.shape().dtype();
  VKSPMD_ASSIGN_OR_RETURN(std::string glsl_type, GlslType(type));
  std::vector<int64_t> window(rank, 1);
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    window[spaces.operand_window[w]] = updates->shape().dimension(dims.offset_dims[w]);
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string original, writer.Value(operand));
  VKSPMD_ASSIGN_OR_RETURN(std::string update, writer.Value(updates));
  std::string code = KernelWriter::Coordinates("c", "i", out);
  absl::StrAppend(&code, "  ", glsl_type, " a = ", original, "(i);\n  for (uint u = 0u; u < ",
                  positions, "u; ++u) {\n", KernelWriter::Coordinates("b", "u", positions_shape));
  std::vector<std::string> batch;
  for (size_t j = 0; j < positions_shape.size(); ++j) batch.push_back(absl::StrCat("b", j));
  VKSPMD_ASSIGN_OR_RETURN(std::string starts, StartCode(scatter, writer, batch, "s"));
  absl::StrAppend(&code, starts);
  // The update applies when its whole window fits and covers this element.
  std::vector<std::string> applies = {"true"};
  for (int64_t d = 0; d < rank; ++d) {
    applies.push_back(absl::StrCat("s", d, " >= 0 && s", d, " <= ", out[d] - window[d], " && int(c",
                                   d, ") >= s", d, " && int(c", d, ") < s", d, " + ", window[d]));
  }
  std::vector<std::string> update_coordinates(updates->shape().rank());
  for (size_t j = 0; j < spaces.result_batch.size(); ++j) {
    update_coordinates[spaces.result_batch[j]] = absl::StrCat("b", j);
  }
  for (size_t w = 0; w < spaces.operand_window.size(); ++w) {
    const int64_t d = spaces.operand_window[w];
    update_coordinates[dims.offset_dims[w]] = absl::StrCat("uint(int(c", d, ") - s", d, ")");
  }
  absl::StrAppend(&code, "    if (", absl::StrJoin(applies, " && "), ") {\n      ", glsl_type,
                  " b = ", update, "(",
                  LinearIndex(updates->shape().dimensions(), update_coordinates),
                  ");\n      a = ", WrapToWidth(type, combine), ";\n    }\n  }\n  return a;\n");
  return code;
}

}  // namespace vkspmd::codegen
