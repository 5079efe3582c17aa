// XLA's top-k as a stable sort of (values, iota) and slices: see top_k.h.
#include "src/ir/top_k.h"

#include <limits>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_set.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"

namespace vkspmd::ir {
namespace {

Instruction* AddParameter(Computation& computation, int64_t number, DType type, std::string name) {
  auto parameter = std::make_unique<Instruction>(Opcode::kParameter, Shape::Scalar(type),
                                                 std::vector<Instruction*>{});
  parameter->attributes().parameter_number = number;
  parameter->set_name(std::move(name));
  return computation.AddInstruction(std::move(parameter));
}

bool IsScalarOf(const Instruction* instruction, DType type) {
  return instruction != nullptr && instruction->shape() == Shape::Scalar(type);
}

// `base`, or `base.N`, not among `taken`.
std::string FreeName(const std::string& base, const absl::flat_hash_set<std::string>& taken) {
  std::string name = base;
  for (int64_t suffix = 1; taken.contains(name); ++suffix)
    name = fmt::format("{}.{}", base, suffix);
  return name;
}

}  // namespace

std::unique_ptr<Computation> TopKComparator(std::string name, DType type, bool largest) {
  auto computation = std::make_unique<Computation>(std::move(name));
  Instruction* lhs = AddParameter(*computation, 0, type, "p.0.lhs");
  Instruction* rhs = AddParameter(*computation, 1, type, "p.0.rhs");
  AddParameter(*computation, 2, DType::kS32, "p.1.lhs");
  AddParameter(*computation, 3, DType::kS32, "p.1.rhs");
  auto compare = std::make_unique<Instruction>(Opcode::kCompare, Shape::Scalar(DType::kPred),
                                               std::vector<Instruction*>{lhs, rhs});
  compare->attributes().direction = largest ? ComparisonDirection::kGt : ComparisonDirection::kLt;
  compare->attributes().total_order = IsFloat(type);
  compare->set_name("compare");
  computation->set_root(computation->AddInstruction(std::move(compare)));
  return computation;
}

absl::StatusOr<std::unique_ptr<Computation>> TopKSortComparator(std::string name,
                                                                const Computation& to_apply,
                                                                DType type) {
  const int64_t count = to_apply.parameter_count();
  const std::string expected =
      fmt::format("({0}[], {0}[], s32[], s32[]) or ({0}[], {0}[]) -> pred[]", DTypeName(type));
  bool fits = (count == 2 || count == 4) && IsScalarOf(to_apply.root(), DType::kPred);
  for (int64_t i = 0; fits && i < count; ++i) {
    fits = IsScalarOf(to_apply.parameter(i), i < 2 ? type : DType::kS32);
  }
  if (!fits) {
    return absl::InvalidArgumentError(
        fmt::format("the TopK comparator %{} must be {}", to_apply.name(), expected));
  }
  if (count == 4) return nullptr;
  // Over the values only: the same ops with two unused index parameters after them.
  auto computation = std::make_unique<Computation>(std::move(name));
  absl::flat_hash_set<std::string> taken;
  for (const auto& instruction : to_apply.instructions()) taken.insert(instruction->name());
  std::vector<Instruction*> arguments;
  for (int64_t i = 0; i < 2; ++i) {
    arguments.push_back(AddParameter(*computation, i, type, to_apply.parameter(i)->name()));
  }
  AddParameter(*computation, 2, DType::kS32, FreeName("p.1.lhs", taken));
  AddParameter(*computation, 3, DType::kS32, FreeName("p.1.rhs", taken));
  const AddInstructionFn add = [&](std::unique_ptr<Instruction> instruction) {
    return computation->AddInstruction(std::move(instruction));
  };
  VKSPMD_ASSIGN_OR_RETURN(Instruction * root, InlineComputation(to_apply, arguments, add));
  computation->set_root(root);
  return computation;
}

absl::Status CheckTopKOperand(const Shape& shape, int64_t k) {
  if (!shape.IsArray() || shape.rank() == 0 || shape.dtype() == DType::kPred) {
    return absl::InvalidArgumentError(fmt::format(
        "top-k takes a numeric array of rank >= 1 (it selects along the last dimension), not {}",
        shape.ToString()));
  }
  const int64_t n = shape.dimension(shape.rank() - 1);
  if (k < 1 || k > n) {
    return absl::InvalidArgumentError(
        fmt::format("k={} must be in 1..{}, the last dimension of {}", k, n, shape.ToString()));
  }
  if (n > std::numeric_limits<int32_t>::max()) {
    return absl::InvalidArgumentError(fmt::format(
        "top-k indices are s32; the last dimension of {} is too long", shape.ToString()));
  }
  return absl::OkStatus();
}

absl::StatusOr<Instruction*> TopKAsSort(Instruction* operand, int64_t k, Computation* comparator,
                                        const AddInstructionFn& add) {
  const Shape& shape = operand->shape();
  VKSPMD_RETURN_IF_ERROR(CheckTopKOperand(shape, k));
  const int64_t last = shape.rank() - 1;
  auto make = [&](Opcode opcode, Shape result, std::vector<Instruction*> operands) {
    auto instruction =
        std::make_unique<Instruction>(opcode, std::move(result), std::move(operands));
    instruction->set_name(std::string(OpcodeName(opcode)));
    return instruction;
  };
  const Shape indices_shape(DType::kS32, shape.dimensions());
  auto iota = make(Opcode::kIota, indices_shape, {});
  iota->attributes().iota_dimension = last;
  Instruction* indices = add(std::move(iota));
  auto sort = make(Opcode::kSort, Shape::Tuple({shape, indices_shape}), {operand, indices});
  sort->attributes().dimensions = {last};
  sort->attributes().is_stable = true;  // equal values keep their order: lower indices first
  sort->attributes().to_apply = comparator;
  Instruction* sorted = add(std::move(sort));
  std::vector<Instruction*> firsts;
  for (int64_t element = 0; element < 2; ++element) {
    const Shape& full = sorted->shape().tuple_elements()[element];
    auto part = make(Opcode::kGetTupleElement, full, {sorted});
    part->attributes().tuple_index = element;
    Instruction* whole = add(std::move(part));
    std::vector<int64_t> dimensions = full.dimensions();
    dimensions[last] = k;
    auto slice = make(Opcode::kSlice, Shape(full.dtype(), dimensions), {whole});
    for (int64_t d = 0; d < full.rank(); ++d) {
      slice->attributes().slice.push_back({0, dimensions[d], 1});
    }
    firsts.push_back(add(std::move(slice)));
  }
  return add(make(Opcode::kTuple, Shape::Tuple({firsts[0]->shape(), firsts[1]->shape()}), firsts));
}

}  // namespace vkspmd::ir
