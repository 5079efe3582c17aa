// Reduction loops. Each lane keeps a "has a value" flag instead of starting from an identity, so
// any reducer works, and the reduce's init value is combined exactly once, as XLA's semantics
// require for a non-identity init.
#include "src/codegen/reduction_code.h"

#include "absl/strings/str_cat.h"
#include "src/ir/module.h"

namespace vkspmd::codegen {

using ir::Instruction;
using ir::Opcode;

absl::StatusOr<std::string> CombinerCode(const Instruction& reduce) {
  const ir::Computation& reducer = *reduce.attributes().to_apply;
  const Instruction* root = reducer.root();
  bool simple = reducer.parameter_count() == 2 && root->operand_count() == 2 &&
                root->operand(0)->opcode() == Opcode::kParameter &&
                root->operand(1)->opcode() == Opcode::kParameter;
  if (simple) {
    switch (root->opcode()) {
      case Opcode::kAdd:
        return std::string("a + b");
      case Opcode::kMultiply:
        return std::string("a * b");
      case Opcode::kMaximum:
        return std::string("xla_max(a, b)");
      case Opcode::kMinimum:
        return std::string("xla_min(a, b)");
      case Opcode::kAnd:
        return std::string("a & b");
      case Opcode::kOr:
        return std::string("a | b");
      default:
        break;
    }
  }
  return absl::UnimplementedError(absl::StrCat(
      "the device compiler supports reduce with add, multiply, maximum, minimum, and, or; ",
      reduce.Describe(), " reduces with %", reducer.name()));
}

namespace {

// subgroupShuffleXor of a value of GLSL `type`; 64-bit values travel as two 32-bit halves, since
// shuffling them directly needs an extension drivers rarely have.
std::string ShuffleXor(const std::string& type, const std::string& value) {
  if (type == "double") {
    return absl::StrCat("packDouble2x32(subgroupShuffleXor(unpackDouble2x32(", value,
                        "), offset))");
  }
  if (type == "int64_t" || type == "uint64_t") {
    return absl::StrCat(type, "(packUint2x32(subgroupShuffleXor(unpackUint2x32(uint64_t(", value,
                        ")), offset)))");
  }
  return absl::StrCat("subgroupShuffleXor(", value, ", offset)");
}

}  // namespace

std::string UnrolledRowLoop(int64_t first, int64_t slots, int64_t length, uint32_t lanes,
                            const std::string& body) {
  const std::string lane = lanes > 1 ? "gl_LocalInvocationID.x" : "0u";
  std::string code;
  for (int64_t j = first; j < slots; ++j) {
    // Every lane's r is below the length where the iteration's last lane's is.
    const bool whole = (j + 1) * int64_t{lanes} <= length;
    absl::StrAppend(&code, "  {\n    uint r = ", lane, " + ", j * lanes, "u;\n",
                    whole ? "" : absl::StrCat("    if (r < ", length, "u) {\n"),
                    "    row_slot = ", j, "u;\n", body, whole ? "" : "    }\n", "  }\n");
  }
  return code;
}

std::string LaneReductionCode(const LaneReduction& reduction, KernelWriter& writer) {
  const std::string& type = reduction.type;
  // Folds `value` (guarded by `value_has`) into acc/has.
  auto fold = [&](const std::string& value, const std::string& value_has) {
    return absl::StrCat("    if (", value_has, ") {\n      if (has) { ", type, " a = acc; ", type,
                        " b = ", value, "; acc = ", reduction.combine, "; } else { acc = ", value,
                        "; has = true; }\n    }\n");
  };
  const std::string lanes = absl::StrCat(reduction.lanes, "u");
  std::string code;
  if (reduction.slots > 0) {
    // The first iteration seeds the accumulator (every lane below the length has it), the others
    // combine: the loop's order, with a constant row_slot in each.
    const std::string lane = reduction.lanes > 1 ? "gl_LocalInvocationID.x" : "0u";
    code = absl::StrCat("  {\n  ", type, " acc = ", type, "(0);\n  bool has = ", lane, " < ",
                        reduction.length, "u;\n  if (has) {\n    uint r = ", lane,
                        ";\n    row_slot = 0u;\n    acc = ", reduction.element, ";\n  }\n");
    if (reduction.slots > 1) {
      const std::string step =
          absl::StrCat("    ", type, " a = acc;\n    ", type, " b = ", reduction.element,
                       ";\n    acc = ", reduction.combine, ";\n");
      absl::StrAppend(&code,
                      UnrolledRowLoop(1, reduction.slots, reduction.length, reduction.lanes, step));
    }
  } else {
    // The first element seeds the accumulator, so the loop itself combines unconditionally.
    code = absl::StrCat(
        "  {\n  ", type, " acc = ", type, "(0);\n  uint r = ", reduction.begin,
        reduction.lanes > 1 ? " + gl_LocalInvocationID.x" : "", ";\n  bool has = r < ",
        reduction.end, ";\n  if (has) { acc = ", reduction.element, "; r += ", lanes, "; }\n",
        "  for (; r < ", reduction.end, "; r += ", lanes, ") {\n    ", type, " a = acc;\n    ",
        type, " b = ", reduction.element, ";\n    acc = ", reduction.combine, ";\n  }\n");
  }
  if (reduction.lanes > 1) {
    writer.RequireSubgroups();
    absl::StrAppend(&code, "  for (uint offset = 1u; offset < min(gl_SubgroupSize, ", lanes,
                    "); offset <<= 1) {\n    ", type, " other = ", ShuffleXor(type, "acc"), ";\n",
                    "    bool other_has = subgroupShuffleXor(has ? 1u : 0u, offset) != 0u;\n",
                    fold("other", "other_has"), "  }\n");
  }
  if (reduction.lanes > 1 && reduction.lanes > reduction.subgroup_size) {
    const std::string partial = writer.AddShared(type, reduction.lanes);
    const std::string partial_has = writer.AddShared("uint", reduction.lanes);
    absl::StrAppend(&code,
                    // Uniform across the workgroup, so the barriers inside are allowed.
                    "  if (gl_NumSubgroups > 1u) {\n", "    if (subgroupElect()) { ", partial,
                    "[gl_SubgroupID] = acc; ", partial_has, "[gl_SubgroupID] = has ? 1u : 0u; }\n",
                    "    barrier();\n    has = false;\n",
                    "    for (uint s = 0u; s < gl_NumSubgroups; ++s) {\n", "  ",
                    fold(absl::StrCat(partial, "[s]"), absl::StrCat(partial_has, "[s] != 0u")),
                    "    }\n", "    barrier();\n  }\n");
  }
  if (reduction.init.empty()) {
    absl::StrAppend(&code, "  ", reduction.result, " = acc;\n  }\n");
  } else {
    absl::StrAppend(&code, "  {\n    ", type, " a = ", reduction.init, ";\n    ", type,
                    " b = acc;\n    ", reduction.result, " = has ? ", reduction.combine,
                    " : a;\n  }\n  }\n");
  }
  return code;
}

}  // namespace vkspmd::codegen
