// Random programs for the differential SPMD fuzzer, and the comparison of partitioned and whole
// evaluation.
#include "tests/fuzz/spmd_program.h"

#include <cmath>
#include <vector>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/builder.h"
#include "src/ir/printer.h"
#include "src/ir/verifier.h"
#include "src/spmd/partition_spec.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::fuzz {

int64_t ByteSource::Below(int64_t count) {
  if (count <= 1) return 0;
  const uint8_t byte = position_ < size_ ? data_[position_++] : 0;
  return byte % count;
}

namespace {

using ir::DType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

constexpr int64_t kDimSizes[] = {1, 2, 3, 4, 5, 6, 8};
constexpr int kMaxOperations = 8;

class ProgramMaker {
 public:
  ProgramMaker(ByteSource& bytes, const spmd::Mesh& mesh, ir::Module& module)
      : bytes_(bytes), mesh_(mesh), module_(module), builder_("main") {}

  absl::StatusOr<Instruction*> Make() {
    add_f32_ = module_.AddComputation(ir::MakeScalarReducer("add_f32", Opcode::kAdd, DType::kF32));
    max_f32_ =
        module_.AddComputation(ir::MakeScalarReducer("max_f32", Opcode::kMaximum, DType::kF32));
    add_s32_ = module_.AddComputation(ir::MakeScalarReducer("add_s32", Opcode::kAdd, DType::kS32));
    const int64_t parameters = 1 + bytes_.Below(3);
    for (int64_t p = 0; p < parameters; ++p) {
      std::vector<int64_t> dims(1 + bytes_.Below(3));
      for (int64_t& size : dims) size = kDimSizes[bytes_.Below(std::size(kDimSizes))];
      const DType type = bytes_.Below(4) == 0 ? DType::kS32 : DType::kF32;
      Instruction* parameter = builder_.Parameter(p, Shape(type, dims), fmt::format("p{}", p));
      VKSPMD_RETURN_IF_ERROR(MaybeAnnotate(parameter, 3));
      values_.push_back(parameter);
    }
    const int operations = 1 + static_cast<int>(bytes_.Below(kMaxOperations));
    for (int step = 0; step < operations; ++step) {
      VKSPMD_ASSIGN_OR_RETURN(Instruction * made, Step());
      if (made == nullptr) continue;
      VKSPMD_RETURN_IF_ERROR(MaybeAnnotate(made, 5));
      values_.push_back(made);
    }
    if (values_.size() >= 2 && bytes_.Below(2) == 0) {
      return builder_.Tuple({values_[values_.size() - 2], values_.back()});
    }
    return values_.back();
  }

  std::unique_ptr<ir::Computation> Finish(Instruction* root) { return builder_.Build(root); }

 private:
  Instruction* Pick() {
    const int64_t recent = std::min<int64_t>(static_cast<int64_t>(values_.size()), 4);
    return values_[values_.size() - 1 - bytes_.Below(recent)];
  }

  // One time in `one_in`: a partition spec over the mesh's axes (each used at most once) as the
  // value's sharding, as mark_sharding sets it.
  absl::Status MaybeAnnotate(Instruction* value, int64_t one_in) {
    if (value->shape().IsTuple() || bytes_.Below(one_in) != 0) return absl::OkStatus();
    std::vector<bool> used(mesh_.axis_count(), false);
    std::vector<std::string> entries;
    for (int64_t d = 0; d < value->shape().rank(); ++d) {
      std::vector<std::string> axes;
      for (int64_t axis = 0; axis < mesh_.axis_count(); ++axis) {
        if (!used[axis] && bytes_.Below(3) == 0) {
          used[axis] = true;
          axes.push_back(std::to_string(axis));
        }
      }
      entries.push_back(axes.empty() ? "None" : fmt::format("({},)", absl::StrJoin(axes, ",")));
    }
    VKSPMD_ASSIGN_OR_RETURN(spmd::PartitionSpec spec, spmd::PartitionSpec::Parse(fmt::format(
                                                          "({},)", absl::StrJoin(entries, ","))));
    VKSPMD_ASSIGN_OR_RETURN(ir::Sharding sharding,
                            spmd::PartitionSpecToSharding(spec, mesh_, value->shape().rank()));
    value->set_sharding(sharding);
    return absl::OkStatus();
  }

  Instruction* ScalarConstant(DType type, double value) {
    ir::Literal scalar{Shape::Scalar(type)};
    scalar.SetFromDouble(0, value);
    return builder_.Constant(std::move(scalar));
  }

  absl::StatusOr<Instruction*> Splat(const Shape& like, double value) {
    return builder_.Broadcast(ScalarConstant(like.dtype(), value), like, {});
  }

  // A value of the same shape as `like`: an earlier one when there is one, else a constant.
  absl::StatusOr<Instruction*> Partner(Instruction* like) {
    std::vector<Instruction*> matches;
    for (Instruction* value : values_) {
      if (value->shape() == like->shape()) matches.push_back(value);
    }
    if (!matches.empty() && bytes_.Below(4) != 0) {
      return matches[bytes_.Below(static_cast<int64_t>(matches.size()))];
    }
    return Splat(like->shape(), static_cast<double>(bytes_.Below(7)) - 3.5);
  }

  std::vector<int64_t> Permutation(int64_t rank) {
    std::vector<int64_t> order(rank);
    for (int64_t i = 0; i < rank; ++i) order[i] = i;
    for (int64_t i = rank - 1; i > 0; --i) std::swap(order[i], order[bytes_.Below(i + 1)]);
    return order;
  }

  absl::StatusOr<Instruction*> Step() {
    Instruction* x = Pick();
    const Shape& shape = x->shape();
    const int64_t rank = shape.rank();
    const bool is_float = shape.dtype() == DType::kF32;
    // A scalar (a reduce over every dim) only meets elementwise ops and broadcasts.
    const int64_t choice = bytes_.Below(14);
    switch (rank == 0 && choice > 3 ? 9 : choice) {
      case 0:  // unary; exp only of a bounded value
        if (!is_float) return builder_.Unary(Opcode::kNegate, x);
        if (bytes_.Below(2) == 0) {
          VKSPMD_ASSIGN_OR_RETURN(Instruction * bounded, builder_.Unary(Opcode::kTanh, x));
          return builder_.Unary(Opcode::kExp, bounded);
        }
        return builder_.Unary(bytes_.Below(2) ? Opcode::kAbs : Opcode::kNegate, x);
      case 1: {  // binary
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, Partner(x));
        const Opcode opcodes[] = {Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply,
                                  Opcode::kMaximum, Opcode::kMinimum};
        return builder_.Binary(opcodes[bytes_.Below(5)], x, y);
      }
      case 2: {  // compare + select
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, Partner(x));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * less,
                                builder_.Compare(x, y, ir::ComparisonDirection::kLt));
        return builder_.Add(Opcode::kSelect, {less, x, y});
      }
      case 3:  // convert between f32 and s32 (floats are small, so no saturation)
        return builder_.Convert(x, is_float ? DType::kS32 : DType::kF32);
      case 4:
        return builder_.Transpose(x, Permutation(rank));
      case 5: {  // reshape: flatten, merge two adjacent dims, or split a dim by 2 or 3
        const int64_t kind = bytes_.Below(3);
        std::vector<int64_t> dims = shape.dimensions();
        const int64_t d = bytes_.Below(rank);
        if (kind == 0) return builder_.Reshape(x, {shape.ElementCount()});
        if (kind == 1 && d + 1 < rank) {
          dims[d] *= dims[d + 1];
          dims.erase(dims.begin() + d + 1);
          return builder_.Reshape(x, dims);
        }
        if (rank >= 3) return nullptr;
        const int64_t factor = dims[d] % 2 == 0 ? 2 : 3;
        if (dims[d] % factor != 0) return builder_.Reshape(x, {shape.ElementCount()});
        dims[d] /= factor;
        dims.insert(dims.begin() + d + (bytes_.Below(2) == 0 ? 0 : 1), factor);
        return builder_.Reshape(x, dims);
      }
      case 6: {  // strided slice
        ir::InstructionAttributes attributes;
        for (int64_t size : shape.dimensions()) {
          const int64_t start = bytes_.Below(size);
          const int64_t limit = start + 1 + bytes_.Below(size - start);
          attributes.slice.push_back({start, limit, 1 + bytes_.Below(2)});
        }
        return builder_.Add(Opcode::kSlice, {x}, attributes);
      }
      case 7: {  // pad with edge and interior padding
        ir::InstructionAttributes attributes;
        for (int64_t d = 0; d < rank; ++d) {
          attributes.padding.push_back({bytes_.Below(3), bytes_.Below(3), bytes_.Below(2)});
        }
        return builder_.Add(Opcode::kPad, {x, ScalarConstant(shape.dtype(), 1)}, attributes);
      }
      case 8: {  // reverse or concatenate with itself
        ir::InstructionAttributes attributes;
        attributes.dimensions = {bytes_.Below(rank)};
        if (bytes_.Below(2) == 0) return builder_.Add(Opcode::kReverse, {x}, attributes);
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, Partner(x));
        return builder_.Add(Opcode::kConcatenate, {x, y}, attributes);
      }
      case 9: {  // broadcast into a new leading or trailing dim
        if (rank >= 3) return nullptr;
        std::vector<int64_t> dims = shape.dimensions();
        std::vector<int64_t> kept(rank);
        const bool leading = bytes_.Below(2) == 0;
        for (int64_t d = 0; d < rank; ++d) kept[d] = leading ? d + 1 : d;
        dims.insert(leading ? dims.begin() : dims.end(), kDimSizes[bytes_.Below(5)]);
        return builder_.Broadcast(x, Shape(shape.dtype(), dims), kept);
      }
      case 10: {  // reduce (sum or max) over one or all dims
        std::vector<int64_t> reduced = {bytes_.Below(rank)};
        if (bytes_.Below(3) == 0) reduced = Permutation(rank);
        const bool maximum = is_float && bytes_.Below(2) == 0;
        Instruction* init = ScalarConstant(shape.dtype(), maximum ? -1e30 : 0);
        return builder_.Reduce(x, init, reduced,
                               maximum ? max_f32_ : (is_float ? add_f32_ : add_s32_));
      }
      case 11: {  // dot: x·yᵀ over the last dim, batched over the first of rank 3
        if (rank < 2) return nullptr;
        ir::DotDimensions dimensions;
        dimensions.lhs_contracting = dimensions.rhs_contracting = {rank - 1};
        if (rank == 3) dimensions.lhs_batch = dimensions.rhs_batch = {0};
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, Partner(x));
        return builder_.Dot(x, y, dimensions);
      }
      case 12: {  // add an iota along one dim
        ir::InstructionAttributes attributes;
        attributes.iota_dimension = bytes_.Below(rank);
        VKSPMD_ASSIGN_OR_RETURN(Instruction * iota,
                                builder_.Add(Opcode::kIota, {}, attributes, shape));
        return builder_.Binary(Opcode::kAdd, x, iota);
      }
      default: {  // dynamic-slice, or dynamic-update-slice with a slice of a partner, at constant
                  // indices (clamped by the op when out of range)
        ir::InstructionAttributes attributes;
        std::vector<Instruction*> indices;
        for (int64_t size : shape.dimensions()) {
          attributes.dynamic_slice_sizes.push_back(1 + bytes_.Below(size));
          indices.push_back(ScalarConstant(DType::kS32, static_cast<double>(bytes_.Below(9))));
        }
        std::vector<Instruction*> operands = {x};
        if (bytes_.Below(2) == 0) {
          operands.insert(operands.end(), indices.begin(), indices.end());
          return builder_.Add(Opcode::kDynamicSlice, operands, attributes);
        }
        VKSPMD_ASSIGN_OR_RETURN(Instruction * partner, Partner(x));
        std::vector<Instruction*> slice_operands = {partner};
        slice_operands.insert(slice_operands.end(), indices.begin(), indices.end());
        VKSPMD_ASSIGN_OR_RETURN(Instruction * update,
                                builder_.Add(Opcode::kDynamicSlice, slice_operands, attributes));
        operands.push_back(update);
        operands.insert(operands.end(), indices.begin(), indices.end());
        return builder_.Add(Opcode::kDynamicUpdateSlice, operands);
      }
    }
  }

  ByteSource& bytes_;
  const spmd::Mesh& mesh_;
  ir::Module& module_;
  ir::ComputationBuilder builder_;
  std::vector<Instruction*> values_;
  ir::Computation* add_f32_ = nullptr;
  ir::Computation* max_f32_ = nullptr;
  ir::Computation* add_s32_ = nullptr;
};

// 1-D, or 2-D with an axis of 2 (first or second); the partitions in any order over the mesh.
absl::StatusOr<spmd::Mesh> MakeMesh(ByteSource& bytes) {
  const int64_t devices = 1 + bytes.Below(8);
  std::vector<int64_t> shape = {devices};
  if (devices % 2 == 0 && bytes.Below(2) == 0) {
    shape = bytes.Below(2) == 0 ? std::vector<int64_t>{2, devices / 2}
                                : std::vector<int64_t>{devices / 2, 2};
  }
  std::vector<int64_t> ids(devices);
  for (int64_t i = 0; i < devices; ++i) ids[i] = i;
  if (bytes.Below(3) == 0) {
    for (int64_t i = devices - 1; i > 0; --i) std::swap(ids[i], ids[bytes.Below(i + 1)]);
  }
  return spmd::Mesh::Create(shape, ids);
}

// Exact for integers and predicates; floats to a relative 1e-4 (partial sums are added in
// another order); NaN and infinity must appear in the same places.
absl::Status Compare(const ir::Literal& actual, const ir::Literal& expected,
                     const std::string& where) {
  if (actual.shape() != expected.shape()) {
    return absl::InternalError(fmt::format("{}: shape {} differs from {}", where,
                                           actual.shape().ToString(), expected.shape().ToString()));
  }
  if (actual.shape().IsTuple()) {
    for (size_t i = 0; i < actual.tuple_elements().size(); ++i) {
      VKSPMD_RETURN_IF_ERROR(Compare(actual.tuple_elements()[i], expected.tuple_elements()[i],
                                     fmt::format("{}.{}", where, i)));
    }
    return absl::OkStatus();
  }
  const bool is_float = ir::IsFloat(actual.dtype());
  for (int64_t i = 0; i < actual.ElementCount(); ++i) {
    const double a = actual.GetAsDouble(i), b = expected.GetAsDouble(i);
    bool same = false;
    if (!is_float) {
      same = actual.GetAsInt64(i) == expected.GetAsInt64(i);
    } else if (std::isnan(a) || std::isnan(b) || std::isinf(a) || std::isinf(b)) {
      same = (std::isnan(a) && std::isnan(b)) || a == b;
    } else {
      same = std::abs(a - b) <= 1e-4 * (1 + std::abs(b));
    }
    if (!same) {
      return absl::InternalError(
          fmt::format("{} element {}: partitioned {} but whole {}", where, i, a, b));
    }
  }
  return absl::OkStatus();
}

}  // namespace

absl::StatusOr<SpmdCase> MakeCase(ByteSource& bytes) {
  VKSPMD_ASSIGN_OR_RETURN(spmd::Mesh mesh, MakeMesh(bytes));
  auto module = std::make_unique<ir::Module>("fuzz");
  ProgramMaker maker(bytes, mesh, *module);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * root, maker.Make());
  module->set_entry(module->AddComputation(maker.Finish(root)));
  VKSPMD_RETURN_IF_ERROR(ir::VerifyModule(*module));
  return SpmdCase{std::move(module), std::move(mesh), static_cast<uint64_t>(bytes.Below(256))};
}

absl::Status CheckCase(const SpmdCase& spmd_case) {
  absl::StatusOr<spmd::testing::EquivalenceOutcome> outcome =
      spmd::testing::RunEquivalence(*spmd_case.module, spmd_case.mesh, spmd_case.seed);
  absl::Status status =
      outcome.ok() ? Compare(outcome->actual, outcome->expected, "result") : outcome.status();
  if (status.ok() || absl::IsUnimplemented(status) || absl::IsInvalidArgument(status)) {
    return absl::OkStatus();
  }
  return absl::InternalError(fmt::format("{}\nmesh {}, argument seed {}\n{}", status.ToString(),
                                         spmd_case.mesh.ToString(), spmd_case.seed,
                                         ir::PrintModule(*spmd_case.module)));
}

absl::Status CheckBytes(const uint8_t* data, size_t size) {
  ByteSource bytes(data, size);
  absl::StatusOr<SpmdCase> spmd_case = MakeCase(bytes);
  if (!spmd_case.ok()) return absl::OkStatus();
  return CheckCase(*spmd_case);
}

}  // namespace vkspmd::fuzz
