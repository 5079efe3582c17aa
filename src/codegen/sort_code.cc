// Sort GLSL (see sort_code.h). The comparator is written out as one GLSL expression per
// instruction over the two elements it compares; the stable rank of candidate x counts the
// elements y that come before it: less(y, x), or y < x and neither is less than the other.
#include "src/codegen/sort_code.h"

#include <map>
#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/codegen/bit_ops_code.h"
#include "src/codegen/glsl_types.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {
namespace {

using ir::Instruction;
using ir::Opcode;

absl::Status Unsupported(const Instruction& sort, const std::string& what) {
  return absl::UnimplementedError(absl::StrCat("the device compiler does not support ", what, " (",
                                               sort.Describe(), ": ", sort.shape().ToString(),
                                               ")"));
}

// The comparator as statements declaring one local per instruction; returns the root's local
// (a bool), named `prefix`N. elements[p] is the GLSL value of comparator parameter p.
absl::StatusOr<std::string> ComparatorCode(const Instruction& sort,
                                           const std::vector<std::string>& elements,
                                           const std::string& prefix, std::string& code) {
  const ir::Computation& comparator = *sort.attributes().to_apply;
  std::map<const Instruction*, std::string> names;
  int next = 0;
  for (const auto& owned : comparator.instructions()) {
    const Instruction& instruction = *owned;
    const std::string name = absl::StrCat(prefix, next++);
    const ir::DType type = instruction.shape().dtype();
    const bool pred = type == ir::DType::kPred;
    VKSPMD_ASSIGN_OR_RETURN(std::string glsl_type, GlslType(type));
    const std::string declared = pred ? "bool" : glsl_type;
    const auto operand = [&](int64_t k) { return names.at(instruction.operand(k)); };
    std::string value;
    switch (instruction.opcode()) {
      case Opcode::kParameter: {
        const std::string& element = elements[instruction.attributes().parameter_number];
        value = pred ? absl::StrCat("(", element, " != 0u)") : element;
        break;
      }
      case Opcode::kConstant: {
        const ir::Literal& literal = *instruction.attributes().literal;
        // Exact, from the bits: a comparator compares against its constants (-0, NaN, inf).
        value = pred ? (literal.GetAsInt64(0) != 0 ? "true" : "false") : GlslLiteral(literal, 0);
        break;
      }
      // A scalar broadcast to a scalar (XLA's comparison expander writes its constants so).
      case Opcode::kBroadcast:
      case Opcode::kReshape:
        value = operand(0);
        break;
      case Opcode::kCompare: {
        static const char* kOperators[] = {"==", "!=", "<", "<=", ">", ">="};
        const ir::DType compared = instruction.operand(0)->shape().dtype();
        std::string a = operand(0), b = operand(1);
        if (instruction.attributes().total_order && ir::IsFloat(compared)) {
          a = TotalOrderKeyCode(compared, a);
          b = TotalOrderKeyCode(compared, b);
          if (a.empty()) {
            return Unsupported(sort, "compare type=TOTALORDER on floats other than f32, f16, bf16");
          }
        }
        value = absl::StrCat("(", a, " ",
                             kOperators[static_cast<int>(instruction.attributes().direction)], " ",
                             b, ")");
        break;
      }
      case Opcode::kAnd:
      case Opcode::kOr:
      case Opcode::kXor: {
        const bool logical = pred;
        const char* op = instruction.opcode() == Opcode::kAnd  ? (logical ? "&&" : "&")
                         : instruction.opcode() == Opcode::kOr ? (logical ? "||" : "|")
                                                               : (logical ? "^^" : "^");
        if (!logical && (!ir::IsInteger(type) || ir::DTypeByteSize(type) > 4)) {
          return Unsupported(sort, "comparator bitwise ops on " + instruction.shape().ToString());
        }
        value = absl::StrCat("(", operand(0), " ", op, " ", operand(1), ")");
        if (!logical) value = WrapToWidth(type, value);
        break;
      }
      case Opcode::kNot:
        if (pred) {
          value = absl::StrCat("!", operand(0));
        } else if (ir::IsInteger(type) && ir::DTypeByteSize(type) <= 4) {
          value = WrapToWidth(type, absl::StrCat("(~", operand(0), ")"));
        } else {
          return Unsupported(sort, "comparator not on " + instruction.shape().ToString());
        }
        break;
      case Opcode::kSelect:
        value = absl::StrCat("(", operand(0), " ? ", operand(1), " : ", operand(2), ")");
        break;
      // XLA's comparison expander writes a TOTALORDER compare as integer ops on the float's
      // bits (compiled dumps): bitcast-convert between types of 16 or 32 bits and integer
      // add/subtract, which wrap at the type's width (32767 - x of a negative s16 does).
      case Opcode::kAdd:
      case Opcode::kSubtract: {
        const int64_t bytes = ir::DTypeByteSize(type);
        if (!ir::IsInteger(type) || (bytes != 2 && bytes != 4)) {
          return Unsupported(sort, "comparator arithmetic on " + instruction.shape().ToString());
        }
        const char* op = instruction.opcode() == Opcode::kAdd ? " + " : " - ";
        value = WrapToWidth(type, absl::StrCat("(", operand(0), op, operand(1), ")"));
        break;
      }
      case Opcode::kBitcastConvert: {
        const ir::DType from = instruction.operand(0)->shape().dtype();
        const int64_t bytes = ir::DTypeByteSize(type);
        if (bytes == 2 || bytes == 4) value = BitcastConvertCode(from, type, operand(0));
        if (value.empty()) {
          return Unsupported(sort, absl::StrCat("comparator bitcast-convert from ",
                                                std::string(ir::DTypeName(from)), " to ",
                                                instruction.shape().ToString()));
        }
        break;
      }
      default:
        return Unsupported(sort, absl::StrCat("comparators using ",
                                              std::string(ir::OpcodeName(instruction.opcode())),
                                              " (%", comparator.name(), ")"));
    }
    absl::StrAppend(&code, "      ", declared, " ", name, " = ", value, ";\n");
    names[&instruction] = name;
  }
  return names.at(comparator.root());
}

}  // namespace

absl::StatusOr<std::string> SortCode(const Instruction& sort, int64_t operand,
                                     KernelWriter& writer) {
  const std::vector<int64_t>& dims = sort.operand(0)->shape().dimensions();
  const int64_t dimension = sort.attributes().dimensions[0];
  const int64_t length = dims[dimension];
  if (length > kMaxSortRow) {
    return Unsupported(sort, absl::StrCat("sorting rows of more than ", kMaxSortRow, " elements (",
                                          length, " along dim ", dimension, ")"));
  }
  const int64_t stride = ir::RowMajorStrides(dims)[dimension];
  // less(y, x): parameters 2k and 2k + 1 are operand k's elements y and x.
  std::vector<std::string> elements;
  for (int64_t k = 0; k < sort.operand_count(); ++k) {
    VKSPMD_ASSIGN_OR_RETURN(std::string read, writer.Value(sort.operand(k)));
    elements.push_back(absl::StrCat(read, "(base + y * ", stride, "u)"));
    elements.push_back(absl::StrCat(read, "(base + x * ", stride, "u)"));
  }
  std::string less_yx;
  VKSPMD_ASSIGN_OR_RETURN(std::string before, ComparatorCode(sort, elements, "l", less_yx));
  for (int64_t k = 0; k < sort.operand_count(); ++k)
    std::swap(elements[2 * k], elements[2 * k + 1]);
  std::string less_xy;
  VKSPMD_ASSIGN_OR_RETURN(std::string after, ComparatorCode(sort, elements, "r", less_xy));
  VKSPMD_ASSIGN_OR_RETURN(std::string result, writer.Value(sort.operand(operand)));
  return absl::StrCat(
      KernelWriter::Coordinates("c", "i", dims), "  uint base = i - c", dimension, " * ", stride,
      "u;\n  for (uint x = 0u; x < ", length, "u; ++x) {\n    uint rank = 0u;\n",
      "    for (uint y = 0u; y < ", length, "u; ++y) {\n      if (y == x) continue;\n", less_yx,
      "      bool y_first = ", before, ";\n      if (!y_first && y < x) {\n", less_xy,
      "        y_first = !", after, ";\n      }\n      rank += y_first ? 1u : 0u;\n    }\n",
      "    if (rank == c", dimension, ") return ", result, "(base + x * ", stride, "u);\n  }\n",
      "  return ", result, "(i);\n");
}

}  // namespace vkspmd::codegen
