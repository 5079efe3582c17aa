// Random module generation.
#include "tests/exec/random_module.h"

#include <random>
#include <vector>

#include "src/base/status_macros.h"
#include "src/ir/builder.h"

namespace vkspmd::testing {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Opcode;
using ir::Shape;

class Generator {
 public:
  Generator(uint32_t seed, ir::Module& module, DType float_type)
      : random_(seed), module_(module), builder_("main"), float_type_(float_type) {}

  absl::StatusOr<Instruction*> Build(int operations) {
    const std::string type_name(ir::DTypeName(float_type_));
    add_float_ = module_.AddComputation(
        ir::MakeScalarReducer("add_" + type_name, Opcode::kAdd, float_type_));
    max_float_ = module_.AddComputation(
        ir::MakeScalarReducer("max_" + type_name, Opcode::kMaximum, float_type_));
    add_s32_ = module_.AddComputation(ir::MakeScalarReducer("add_s32", Opcode::kAdd, DType::kS32));
    const std::vector<int64_t> sizes = {1, 3, 5, 8, 17};
    int64_t rows = Pick(sizes), columns = Pick(sizes);
    floats_.push_back(builder_.Parameter(0, Shape(float_type_, {rows, columns}), "x"));
    floats_.push_back(builder_.Parameter(1, Shape(float_type_, {rows, columns}), "y"));
    integers_.push_back(builder_.Parameter(2, Shape(DType::kS32, {rows, columns}), "n"));
    for (int step = 0; step < operations; ++step) {
      absl::Status status = Step();
      if (!status.ok()) return status;
    }
    std::vector<Instruction*> outputs = {floats_.back(), integers_.back()};
    if (floats_.size() > 3) outputs.push_back(floats_[floats_.size() - 2]);
    return builder_.Tuple(outputs);
  }

  std::unique_ptr<ir::Computation> Finish(Instruction* root) { return builder_.Build(root); }

 private:
  template <typename T>
  T Pick(const std::vector<T>& values) {
    return values[std::uniform_int_distribution<size_t>(0, values.size() - 1)(random_)];
  }
  Instruction* Recent(const std::vector<Instruction*>& values) {
    size_t low = values.size() > 4 ? values.size() - 4 : 0;
    return values[std::uniform_int_distribution<size_t>(low, values.size() - 1)(random_)];
  }
  // A value with the same dimensions as `like` from `pool`, or a broadcast constant.
  absl::StatusOr<Instruction*> Partner(const std::vector<Instruction*>& pool, Instruction* like) {
    std::vector<Instruction*> matches;
    for (Instruction* value : pool) {
      if (value->shape().dimensions() == like->shape().dimensions()) matches.push_back(value);
    }
    if (!matches.empty() && random_() % 4 != 0) return Pick(matches);
    ir::Literal scalar{Shape::Scalar(like->shape().dtype())};
    scalar.SetFromDouble(
        0, static_cast<double>(random_() % 7) - 3 + 0.5 * ir::IsFloat(like->shape().dtype()));
    return builder_.Broadcast(builder_.Constant(std::move(scalar)), like->shape(), {});
  }

  absl::Status Step() {
    switch (random_() % 14) {
      case 0: {  // Float unary ops; sine and cosine get bounded arguments, since GLSL lets
                 // drivers reduce large arguments inexactly.
        Instruction* x = Recent(floats_);
        Opcode opcode = Pick<Opcode>({Opcode::kTanh, Opcode::kSine, Opcode::kCosine,
                                      Opcode::kLogistic, Opcode::kNegate, Opcode::kAbs});
        if (opcode == Opcode::kSine || opcode == Opcode::kCosine) {
          VKSPMD_ASSIGN_OR_RETURN(x, builder_.Unary(Opcode::kTanh, x));
        }
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Unary(opcode, x));
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 1: {  // exp and sqrt on bounded, non-negative inputs.
        VKSPMD_ASSIGN_OR_RETURN(Instruction * bounded,
                                builder_.Unary(Opcode::kTanh, Recent(floats_)));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * magnitude, builder_.Unary(Opcode::kAbs, bounded));
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * y,
            builder_.Unary(Pick<Opcode>({Opcode::kExp, Opcode::kSqrt}), magnitude));
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 2:
      case 3: {  // Float binary ops.
        Instruction* a = Recent(floats_);
        VKSPMD_ASSIGN_OR_RETURN(Instruction * b, Partner(floats_, a));
        Opcode opcode =
            Pick<Opcode>({Opcode::kAdd, Opcode::kMultiply, Opcode::kMaximum, Opcode::kMinimum});
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Binary(opcode, a, b));
        // Repeated products would overflow to inf on one side and not the other; keep them bounded.
        if (opcode == Opcode::kMultiply) {
          VKSPMD_ASSIGN_OR_RETURN(y, builder_.Unary(Opcode::kTanh, y));
        }
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 4: {  // Integer binary ops, every XLA corner included (division by zero, shifts).
        Instruction* a = Recent(integers_);
        VKSPMD_ASSIGN_OR_RETURN(Instruction * b, Partner(integers_, a));
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * y,
            builder_.Binary(
                Pick<Opcode>({Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide,
                              Opcode::kRemainder, Opcode::kMaximum, Opcode::kAnd, Opcode::kXor,
                              Opcode::kShiftLeft, Opcode::kShiftRightArithmetic,
                              Opcode::kShiftRightLogical}),
                a, b));
        integers_.push_back(y);
        return absl::OkStatus();
      }
      case 5: {  // compare + select.
        Instruction* a = Recent(floats_);
        VKSPMD_ASSIGN_OR_RETURN(Instruction * b, Partner(floats_, a));
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * predicate,
            builder_.Compare(a, b,
                             Pick<ir::ComparisonDirection>(
                                 {ir::ComparisonDirection::kLt, ir::ComparisonDirection::kGe})));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Add(Opcode::kSelect, {predicate, a, b}));
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 6: {  // Integers into floats.
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Convert(Recent(integers_), float_type_));
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 7: {  // Transpose, reverse or a strided slice of a rank-2 value.
        Instruction* x = Recent(floats_);
        if (x->shape().rank() != 2) return absl::OkStatus();
        Instruction* y = nullptr;
        int choice = random_() % 3;
        if (choice == 0) {
          VKSPMD_ASSIGN_OR_RETURN(y, builder_.Transpose(x, {1, 0}));
        } else if (choice == 1) {
          ir::InstructionAttributes attributes;
          attributes.dimensions = {static_cast<int64_t>(random_() % 2)};
          VKSPMD_ASSIGN_OR_RETURN(y, builder_.Add(Opcode::kReverse, {x}, attributes));
        } else {
          ir::InstructionAttributes attributes;
          for (int64_t size : x->shape().dimensions()) {
            int64_t start = size > 1 ? static_cast<int64_t>(random_() % 2) : 0;
            attributes.slice.push_back({start, size, size > 2 ? 2 : 1});
          }
          VKSPMD_ASSIGN_OR_RETURN(y, builder_.Add(Opcode::kSlice, {x}, attributes));
        }
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 8: {  // Reduce a rank-2 value along one dimension, then broadcast it back.
        Instruction* x = Recent(floats_);
        if (x->shape().rank() != 2) return absl::OkStatus();
        int64_t dimension = random_() % 2;
        bool maximum = random_() % 2;
        ir::Literal init{Shape::Scalar(float_type_)};
        init.SetFromDouble(0, maximum ? -1e30 : 0);
        VKSPMD_ASSIGN_OR_RETURN(Instruction * reduced,
                                builder_.Reduce(x, builder_.Constant(std::move(init)), {dimension},
                                                maximum ? max_float_ : add_float_));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y,
                                builder_.Broadcast(reduced, x->shape(), {1 - dimension}));
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 9: {  // x · xᵀ: [m,k]·[m,k] contracting k gives [m,m].
        Instruction* x = Recent(floats_);
        if (x->shape().rank() != 2) return absl::OkStatus();
        VKSPMD_ASSIGN_OR_RETURN(Instruction * scaled, builder_.Unary(Opcode::kTanh, x));
        ir::DotDimensions dimensions;
        dimensions.lhs_contracting = {1};
        dimensions.rhs_contracting = {1};
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Dot(scaled, scaled, dimensions));
        floats_.push_back(y);
        return absl::OkStatus();
      }
      case 10: {  // Integer reduce.
        Instruction* x = Recent(integers_);
        if (x->shape().rank() != 2) return absl::OkStatus();
        ir::Literal zero{Shape::Scalar(DType::kS32)};
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * reduced,
            builder_.Reduce(x, builder_.Constant(std::move(zero)), {1}, add_s32_));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Broadcast(reduced, x->shape(), {0}));
        integers_.push_back(y);
        return absl::OkStatus();
      }
      case 11: {  // Other integer widths: wrap-around arithmetic, shifts, saturating converts.
        const DType narrow = Pick<DType>(
            {DType::kS8, DType::kU8, DType::kS16, DType::kU16, DType::kS64, DType::kU64});
        Instruction* source = random_() % 2 ? Recent(integers_) : nullptr;
        if (source == nullptr) {  // Floats far outside the narrow range saturate.
          ir::Literal scale{Shape::Scalar(float_type_)};
          scale.SetFromDouble(0, 40000.0);
          Instruction* x = Recent(floats_);
          VKSPMD_ASSIGN_OR_RETURN(
              Instruction * scales,
              builder_.Broadcast(builder_.Constant(std::move(scale)), x->shape(), {}));
          VKSPMD_ASSIGN_OR_RETURN(source, builder_.Binary(Opcode::kMultiply, x, scales));
        }
        VKSPMD_ASSIGN_OR_RETURN(Instruction * a, builder_.Convert(source, narrow));
        ir::Literal constant{Shape::Scalar(narrow)};
        constant.SetFromInt64(0, static_cast<int64_t>(random_() % 400) - 200);
        Instruction* b = a;
        if (random_() % 2) {
          VKSPMD_ASSIGN_OR_RETURN(
              b, builder_.Broadcast(builder_.Constant(std::move(constant)), a->shape(), {}));
        }
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * y,
            builder_.Binary(
                Pick<Opcode>({Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply, Opcode::kDivide,
                              Opcode::kRemainder, Opcode::kMinimum, Opcode::kOr, Opcode::kShiftLeft,
                              Opcode::kShiftRightArithmetic, Opcode::kShiftRightLogical}),
                a, b));
        if (random_() % 2) {
          VKSPMD_ASSIGN_OR_RETURN(
              y, builder_.Unary(Pick<Opcode>({Opcode::kNegate, Opcode::kNot, Opcode::kAbs}), y));
        }
        VKSPMD_ASSIGN_OR_RETURN(Instruction * wide, builder_.Convert(y, DType::kS32));
        integers_.push_back(wide);
        return absl::OkStatus();
      }
      case 12: {  // f64 arithmetic, then back to the float type.
        VKSPMD_ASSIGN_OR_RETURN(Instruction * a, builder_.Convert(Recent(floats_), DType::kF64));
        VKSPMD_ASSIGN_OR_RETURN(Instruction * b, builder_.Convert(Recent(floats_), DType::kF64));
        if (a->shape().dimensions() != b->shape().dimensions()) b = a;
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * y,
            builder_.Binary(Pick<Opcode>({Opcode::kAdd, Opcode::kSubtract, Opcode::kMultiply,
                                          Opcode::kMaximum, Opcode::kMinimum}),
                            a, b));
        if (random_() % 2) {
          VKSPMD_ASSIGN_OR_RETURN(Instruction * magnitude, builder_.Unary(Opcode::kAbs, y));
          VKSPMD_ASSIGN_OR_RETURN(y, builder_.Unary(Opcode::kSqrt, magnitude));
        }
        VKSPMD_ASSIGN_OR_RETURN(Instruction * narrowed, builder_.Convert(y, float_type_));
        floats_.push_back(narrowed);
        return absl::OkStatus();
      }
      default: {  // Pad (low and interior padding), then slice the original extent back out.
        Instruction* x = Recent(floats_);
        if (x->shape().rank() != 2) return absl::OkStatus();
        ir::InstructionAttributes attributes;
        attributes.padding = {{1, 0, static_cast<int64_t>(random_() % 2)}, {0, 2, 0}};
        ir::Literal zero{Shape::Scalar(float_type_)};
        VKSPMD_ASSIGN_OR_RETURN(
            Instruction * padded,
            builder_.Add(Opcode::kPad, {x, builder_.Constant(std::move(zero))}, attributes));
        ir::InstructionAttributes window;
        window.slice = {{1, padded->shape().dimension(0), 1}, {0, x->shape().dimension(1), 1}};
        VKSPMD_ASSIGN_OR_RETURN(Instruction * y, builder_.Add(Opcode::kSlice, {padded}, window));
        floats_.push_back(y);
        return absl::OkStatus();
      }
    }
  }

  std::mt19937 random_;
  ir::Module& module_;
  ir::ComputationBuilder builder_;
  std::vector<Instruction*> floats_;
  std::vector<Instruction*> integers_;
  const DType float_type_;
  ir::Computation* add_float_ = nullptr;
  ir::Computation* max_float_ = nullptr;
  ir::Computation* add_s32_ = nullptr;
};

}  // namespace

std::vector<ir::Literal> RandomArguments(const ir::Module& module, uint32_t seed, double low,
                                         double high) {
  std::mt19937 random(seed);
  std::vector<ir::Literal> arguments;
  for (const Instruction* parameter : module.entry()->parameters()) {
    ir::Literal literal(parameter->shape());
    for (int64_t i = 0; i < literal.ElementCount(); ++i) {
      if (ir::IsFloat(parameter->shape().dtype())) {
        literal.SetFromDouble(i, std::uniform_real_distribution<double>(low, high)(random));
      } else {
        literal.SetFromInt64(i, std::uniform_int_distribution<int>(-40, 40)(random));
      }
    }
    arguments.push_back(std::move(literal));
  }
  return arguments;
}

absl::StatusOr<std::unique_ptr<ir::Module>> RandomModule(uint32_t seed, int operations,
                                                         ir::DType float_type) {
  auto module = std::make_unique<ir::Module>("random_" + std::to_string(seed));
  Generator generator(seed, *module, float_type);
  VKSPMD_ASSIGN_OR_RETURN(Instruction * root, generator.Build(operations));
  module->set_entry(module->AddComputation(generator.Finish(root)));
  return module;
}

}  // namespace vkspmd::testing
