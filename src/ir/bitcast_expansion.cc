// Width-changing bitcast-convert as same-width ops (see bitcast_expansion.h).
#include "src/ir/bitcast_expansion.h"

#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "src/ir/entry_rewrite.h"
#include "src/ir/inline_calls.h"

namespace vkspmd::ir {
namespace {

bool ChangesWidth(const Instruction& instruction) {
  return instruction.opcode() == Opcode::kBitcastConvert &&
         DTypeByteSize(instruction.operand(0)->shape().dtype()) !=
             DTypeByteSize(instruction.shape().dtype());
}

DType UnsignedOfWidth(int64_t bytes) {
  switch (bytes) {
    case 1:
      return DType::kU8;
    case 2:
      return DType::kU16;
    case 4:
      return DType::kU32;
    default:
      return DType::kU64;
  }
}

// Writes the expansion's instructions, named after the bitcast.
class Writer : public ExpansionBuilder {
 public:
  using ExpansionBuilder::ExpansionBuilder;

  // `value`'s bits as `type` (of the same width); `value` itself when it is of that type.
  Instruction* SameWidth(Instruction* value, DType type) {
    if (value->shape().dtype() == type) return value;
    return New(Opcode::kBitcastConvert, Shape(type, value->shape().dimensions()), {value});
  }

  // f32[d] -> u8[d,4]: element k of the last dim is bits >> 8k, truncated to 8 bits.
  Instruction* Narrow(Instruction* operand) {
    const DType to = original().shape().dtype();
    const int64_t narrow_bits = 8 * DTypeByteSize(to);
    const DType wide_unsigned = UnsignedOfWidth(DTypeByteSize(operand->shape().dtype()));
    const std::vector<int64_t>& dims = original().shape().dimensions();
    const int64_t last = static_cast<int64_t>(dims.size()) - 1;
    InstructionAttributes keep_dims;
    keep_dims.dimensions.resize(last);
    std::iota(keep_dims.dimensions.begin(), keep_dims.dimensions.end(), 0);
    Instruction* spread = New(Opcode::kBroadcast, Shape(wide_unsigned, dims),
                              {SameWidth(operand, wide_unsigned)}, std::move(keep_dims));
    Instruction* shift = Convert(New(Opcode::kMultiply, Shape(DType::kS32, dims),
                                     {Iota(dims, last), Splat(DType::kS32, narrow_bits, dims)}),
                                 wide_unsigned);
    Instruction* shifted =
        New(Opcode::kShiftRightLogical, Shape(wide_unsigned, dims), {spread, shift});
    return SameWidth(Convert(shifted, UnsignedOfWidth(DTypeByteSize(to))), to);
  }

  // u8[d,4] -> f32[d]: the or of narrow element k << 8k, zero-extended.
  Instruction* Widen(Instruction* operand) {
    const DType to = original().shape().dtype();
    const int64_t narrow_bits = 8 * DTypeByteSize(operand->shape().dtype());
    const DType wide_unsigned = UnsignedOfWidth(DTypeByteSize(to));
    const std::vector<int64_t>& dims = original().shape().dimensions();
    const int64_t last = static_cast<int64_t>(dims.size());
    const int64_t ratio = operand->shape().dimension(last);
    Instruction* bits =
        SameWidth(operand, UnsignedOfWidth(DTypeByteSize(operand->shape().dtype())));
    Instruction* result = nullptr;
    for (int64_t k = 0; k < ratio; ++k) {
      Instruction* value = Convert(Reshape(Slice(bits, last, k, k + 1), dims), wide_unsigned);
      if (k > 0) {
        value = New(Opcode::kShiftLeft, Shape(wide_unsigned, dims),
                    {value, Splat(wide_unsigned, k * narrow_bits, dims)});
      }
      result =
          result == nullptr ? value : New(Opcode::kOr, Shape(wide_unsigned, dims), {result, value});
    }
    return SameWidth(result, to);
  }
};

}  // namespace

bool HasWidthChangingBitcast(const Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (ChangesWidth(*instruction)) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Module>> ExpandWidthChangingBitcasts(const Module& module) {
  return RewriteEntry(module,
                      [](const Instruction& instruction, const std::vector<Instruction*>& operands,
                         const AddInstructionFn& add) -> absl::StatusOr<Instruction*> {
                        if (!ChangesWidth(instruction)) return nullptr;
                        Writer writer(instruction, add);
                        const bool narrows = DTypeByteSize(instruction.shape().dtype()) <
                                             DTypeByteSize(instruction.operand(0)->shape().dtype());
                        return narrows ? writer.Narrow(operands[0]) : writer.Widen(operands[0]);
                      });
}

}  // namespace vkspmd::ir
