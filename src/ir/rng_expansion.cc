// rng-bit-generator written out as Philox4x32-10 or Threefry-2x32 over integer elementwise ops, and
// rng drawn from an rng-bit-generator (see rng_expansion.h); interp/rng.cc is the same on the host.
#include "src/ir/rng_expansion.h"

#include <array>
#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "fmt/format.h"
#include "src/base/status_macros.h"
#include "src/ir/entry_rewrite.h"
#include "src/ir/inline_calls.h"

namespace vkspmd::ir {
namespace {

constexpr uint64_t kMultiplier0 = 0xD2511F53u, kMultiplier1 = 0xCD9E8D57u;
constexpr uint64_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
constexpr int kRounds = 10;

// Writes instructions through `add` (which names them uniquely and places them).
class Writer {
 public:
  explicit Writer(AddInstructionFn add) : add_(std::move(add)) {}

  Instruction* Add(std::unique_ptr<Instruction> instruction) {
    return add_(std::move(instruction));
  }

  Instruction* New(Opcode opcode, Shape shape, std::vector<Instruction*> operands) {
    auto instruction = std::make_unique<Instruction>(opcode, std::move(shape), std::move(operands));
    instruction->set_name(fmt::format("rng.{}", OpcodeName(opcode)));
    instruction->set_location(location_);
    return Add(std::move(instruction));
  }

  // A scalar constant of `type`.
  Instruction* Constant(DType type, uint64_t value) {
    Instruction* constant = New(Opcode::kConstant, Shape::Scalar(type), {});
    Literal literal(Shape::Scalar(type));
    literal.SetFromUint64(0, value);
    constant->attributes().literal = std::move(literal);
    return constant;
  }

  // `scalar` broadcast to `count` elements (itself when `count` is that of a scalar: -1).
  Instruction* Splat(Instruction* scalar, int64_t count) {
    if (count < 0) return scalar;
    return New(Opcode::kBroadcast, Shape(scalar->shape().dtype(), {count}), {scalar});
  }

  Instruction* Binary(Opcode opcode, Instruction* lhs, Instruction* rhs) {
    return New(opcode, lhs->shape(), {lhs, rhs});
  }

  // lhs OP constant, the constant broadcast to lhs's shape.
  Instruction* BinaryConstant(Opcode opcode, Instruction* lhs, uint64_t value) {
    Instruction* constant = Constant(lhs->shape().dtype(), value);
    const int64_t count = lhs->shape().rank() == 0 ? -1 : lhs->shape().dimensions()[0];
    return Binary(opcode, lhs, Splat(constant, count));
  }

  Instruction* Convert(Instruction* operand, DType type) {
    if (operand->shape().dtype() == type) return operand;
    return New(Opcode::kConvert, Shape(type, operand->shape().dimensions()), {operand});
  }

  Instruction* Compare(Instruction* lhs, Instruction* rhs, ComparisonDirection direction) {
    Instruction* compare =
        New(Opcode::kCompare, Shape(DType::kPred, lhs->shape().dimensions()), {lhs, rhs});
    compare->attributes().direction = direction;
    return compare;
  }

  Instruction* Select(Instruction* predicate, Instruction* on_true, Instruction* on_false) {
    return New(Opcode::kSelect, on_true->shape(), {predicate, on_true, on_false});
  }

  Instruction* Iota(DType type, int64_t count) {
    return New(Opcode::kIota, Shape(type, {count}), {});
  }

  // Word `index` of the u64[n] `state` as a scalar; 0 past its end.
  Instruction* StateWord(Instruction* state, int64_t index) {
    if (index >= state->shape().dimensions()[0]) return Constant(DType::kU64, 0);
    Instruction* slice = New(Opcode::kSlice, Shape(DType::kU64, {1}), {state});
    slice->attributes().slice = {{index, index + 1, 1}};
    return New(Opcode::kReshape, Shape::Scalar(DType::kU64), {slice});
  }

  // Elements [start, start + count) of the vector `value`.
  Instruction* Slice(Instruction* value, int64_t start, int64_t count) {
    Instruction* slice = New(Opcode::kSlice, Shape(value->shape().dtype(), {count}), {value});
    slice->attributes().slice = {{start, start + count, 1}};
    return slice;
  }

  Instruction* Unary(Opcode opcode, Instruction* operand) {
    return New(opcode, operand->shape(), {operand});
  }

  void set_location(SourceLocation location) { location_ = location; }

 private:
  AddInstructionFn add_;
  SourceLocation location_;
};

// `value` (u64, any shape) + `count` with the carry into `high`: {low, high}.
std::pair<Instruction*, Instruction*> AddWithCarry(Writer& writer, Instruction* low,
                                                   Instruction* high, Instruction* count) {
  Instruction* sum = writer.Binary(Opcode::kAdd, low, count);
  Instruction* carry =
      writer.Convert(writer.Compare(sum, low, ComparisonDirection::kLt), DType::kU64);
  return {sum, writer.Binary(Opcode::kAdd, high, carry)};
}

// The 32-bit word `word_index` (u64[count]) of the Philox stream keyed by `key` from counter
// {`low`, `high`} (scalars): word j is word j % 4 of the block with counter + j / 4.
Instruction* PhiloxWords(Writer& writer, Instruction* word_index, Instruction* key,
                         Instruction* low, Instruction* high, int64_t count) {
  Instruction* block = writer.BinaryConstant(Opcode::kShiftRightLogical, word_index, 2);
  auto [counter_low, counter_high] =
      AddWithCarry(writer, writer.Splat(low, count), writer.Splat(high, count), block);
  auto low_half = [&](Instruction* value) { return writer.Convert(value, DType::kU32); };
  auto high_half = [&](Instruction* value) {
    return low_half(writer.BinaryConstant(Opcode::kShiftRightLogical, value, 32));
  };
  std::vector<Instruction*> c = {low_half(counter_low), high_half(counter_low),
                                 low_half(counter_high), high_half(counter_high)};
  Instruction* key0 = low_half(key);
  Instruction* key1 = high_half(key);
  for (int round = 0; round < kRounds; ++round) {
    Instruction* product0 =
        writer.BinaryConstant(Opcode::kMultiply, writer.Convert(c[0], DType::kU64), kMultiplier0);
    Instruction* product1 =
        writer.BinaryConstant(Opcode::kMultiply, writer.Convert(c[2], DType::kU64), kMultiplier1);
    Instruction* next0 =
        writer.Binary(Opcode::kXor, writer.Binary(Opcode::kXor, high_half(product1), c[1]),
                      writer.Splat(key0, count));
    Instruction* next2 =
        writer.Binary(Opcode::kXor, writer.Binary(Opcode::kXor, high_half(product0), c[3]),
                      writer.Splat(key1, count));
    c = {next0, low_half(product1), next2, low_half(product0)};
    key0 = writer.BinaryConstant(Opcode::kAdd, key0, kWeyl0);
    key1 = writer.BinaryConstant(Opcode::kAdd, key1, kWeyl1);
  }
  Instruction* slot = writer.BinaryConstant(Opcode::kAnd, word_index, 3);
  Instruction* word = c[3];
  for (int k = 2; k >= 0; --k) {
    Instruction* is_slot = writer.Compare(
        slot, writer.Splat(writer.Constant(DType::kU64, k), count), ComparisonDirection::kEq);
    word = writer.Select(is_slot, c[k], word);
  }
  return word;
}

// Threefry-2x32 with 20 rounds of the blocks {low word, high word} of `counter` (u64[count]),
// keyed by the low and high words of `key` (a u64 scalar): the output words {x0, x1}, u32[count].
// Each rotation reads its word twice; the device compiler computes such shared values once
// (codegen's KernelWriter::ShareValues), not once per reader.
std::pair<Instruction*, Instruction*> ThreeFryBlocks(Writer& writer, Instruction* counter,
                                                     Instruction* key, int64_t count) {
  constexpr std::array<uint64_t, 8> kRotations = {13, 15, 26, 6, 17, 29, 16, 24};
  auto low_half = [&](Instruction* value) { return writer.Convert(value, DType::kU32); };
  auto high_half = [&](Instruction* value) {
    return low_half(writer.BinaryConstant(Opcode::kShiftRightLogical, value, 32));
  };
  const std::array<Instruction*, 3> ks = {
      low_half(key), high_half(key),
      writer.Binary(Opcode::kXor, writer.BinaryConstant(Opcode::kXor, low_half(key), 0x1BD11BDAu),
                    high_half(key))};
  Instruction* x0 = writer.Binary(Opcode::kAdd, low_half(counter), writer.Splat(ks[0], count));
  Instruction* x1 = writer.Binary(Opcode::kAdd, high_half(counter), writer.Splat(ks[1], count));
  for (int block = 0; block < 5; ++block) {
    for (int round = 0; round < 4; ++round) {
      const uint64_t rotation = kRotations[(block % 2) * 4 + round];
      x0 = writer.Binary(Opcode::kAdd, x0, x1);
      Instruction* rotated =
          writer.Binary(Opcode::kOr, writer.BinaryConstant(Opcode::kShiftLeft, x1, rotation),
                        writer.BinaryConstant(Opcode::kShiftRightLogical, x1, 32 - rotation));
      x1 = writer.Binary(Opcode::kXor, rotated, x0);
    }
    x0 = writer.Binary(Opcode::kAdd, x0, writer.Splat(ks[(block + 1) % 3], count));
    Instruction* injected =
        writer.BinaryConstant(Opcode::kAdd, ks[(block + 2) % 3], static_cast<uint64_t>(block + 1));
    x1 = writer.Binary(Opcode::kAdd, x1, writer.Splat(injected, count));
  }
  return {x0, x1};
}

// rng_three_fry(state) as (new state, bits), laid out as ThreeFryPairing describes.
absl::StatusOr<Instruction*> ExpandThreeFry(Writer& writer, const Instruction& generator,
                                            Instruction* state) {
  VKSPMD_RETURN_IF_ERROR(CheckThreeFryState(state->shape(), generator.Describe()));
  const Shape& bits_shape = generator.shape().tuple_elements()[1];
  const bool wide = DTypeByteSize(bits_shape.dtype()) == 8;
  const ThreeFryPairing pairing = ThreeFryPairingOf(bits_shape);
  const int64_t blocks = wide ? bits_shape.ElementCount() : pairing.Blocks();
  Instruction* key = writer.StateWord(state, 0);
  Instruction* counter = writer.StateWord(state, 1);
  // u64 sums wrap at 2^64, as the counter does.
  Instruction* block_counters =
      writer.Binary(Opcode::kAdd, writer.Iota(DType::kU64, blocks), writer.Splat(counter, blocks));
  auto [x0, x1] = ThreeFryBlocks(writer, block_counters, key, blocks);
  Instruction* bits = nullptr;
  if (wide) {
    Instruction* high =
        writer.BinaryConstant(Opcode::kShiftLeft, writer.Convert(x1, DType::kU64), 32);
    bits = writer.Binary(Opcode::kOr, writer.Convert(x0, DType::kU64), high);
  } else {
    // Block (o, h, k) gives elements (o, 2h, k) and (o, 2h + 1, k): the words stacked on a dim
    // after h, then merged into it, and an odd paired dim's last word dropped.
    const int64_t half = (pairing.size + 1) / 2;
    const Shape word_shape(DType::kU32, {pairing.outer, half, 1, pairing.inner});
    Instruction* stacked = writer.New(Opcode::kConcatenate,
                                      Shape(DType::kU32, {pairing.outer, half, 2, pairing.inner}),
                                      {writer.New(Opcode::kReshape, word_shape, {x0}),
                                       writer.New(Opcode::kReshape, word_shape, {x1})});
    stacked->attributes().dimensions = {2};
    bits = writer.New(Opcode::kReshape,
                      Shape(DType::kU32, {pairing.outer, 2 * half, pairing.inner}), {stacked});
    if (2 * half != pairing.size) {
      bits = writer.New(Opcode::kSlice,
                        Shape(DType::kU32, {pairing.outer, pairing.size, pairing.inner}), {bits});
      bits->attributes().slice = {
          {0, pairing.outer, 1}, {0, pairing.size, 1}, {0, pairing.inner, 1}};
    }
  }
  // Narrower outputs take the low bits (convert between integers wraps).
  bits = writer.Convert(bits, bits_shape.dtype());
  if (bits_shape.dimensions() != bits->shape().dimensions()) {
    bits = writer.New(Opcode::kReshape, bits_shape, {bits});
  }
  // The key is kept; the counter advances by the blocks drawn.
  Instruction* new_counter =
      writer.BinaryConstant(Opcode::kAdd, counter, static_cast<uint64_t>(blocks));
  Instruction* at_counter =
      writer.Compare(writer.Iota(DType::kU64, 2), writer.Splat(writer.Constant(DType::kU64, 1), 2),
                     ComparisonDirection::kEq);
  Instruction* new_state = writer.Select(at_counter, writer.Splat(new_counter, 2), state);
  return writer.New(Opcode::kTuple, generator.shape(), {new_state, bits});
}

// rng-bit-generator(state) as (new state, bits), in `writer`'s computation.
absl::StatusOr<Instruction*> Expand(Writer& writer, const Instruction& generator,
                                    Instruction* state) {
  writer.set_location(generator.location());
  if (generator.attributes().rng_algorithm == RngAlgorithm::kThreeFry) {
    return ExpandThreeFry(writer, generator, state);
  }
  const Shape& bits_shape = generator.shape().tuple_elements()[1];
  const int64_t count = bits_shape.ElementCount();
  const int64_t words_per_element = DTypeByteSize(bits_shape.dtype()) == 8 ? 2 : 1;
  Instruction* key = writer.StateWord(state, 0);
  Instruction* low = writer.StateWord(state, 1);
  Instruction* high = writer.StateWord(state, 2);

  Instruction* first_word = writer.BinaryConstant(
      Opcode::kMultiply, writer.Iota(DType::kU64, count), static_cast<uint64_t>(words_per_element));
  Instruction* value =
      writer.Convert(PhiloxWords(writer, first_word, key, low, high, count), DType::kU64);
  if (words_per_element == 2) {
    Instruction* second_word = writer.BinaryConstant(Opcode::kAdd, first_word, 1);
    Instruction* upper =
        writer.Convert(PhiloxWords(writer, second_word, key, low, high, count), DType::kU64);
    value = writer.Binary(Opcode::kOr, value, writer.BinaryConstant(Opcode::kShiftLeft, upper, 32));
  }
  // Narrower outputs take the low bits (convert between integers wraps).
  Instruction* bits = writer.Convert(value, bits_shape.dtype());
  if (bits_shape.dimensions() != bits->shape().dimensions()) {
    bits = writer.New(Opcode::kReshape, bits_shape, {bits});
  }

  // The counter after the last block: counter + ceil(words / 4).
  const auto blocks = static_cast<uint64_t>((count * words_per_element + 3) / 4);
  auto [new_low, new_high] = AddWithCarry(writer, low, high, writer.Constant(DType::kU64, blocks));
  const int64_t state_words = state->shape().dimensions()[0];
  Instruction* new_state = state;
  if (state_words > 1) {
    Instruction* index = writer.Iota(DType::kU64, state_words);
    for (const auto& [word, updated] : {std::pair{2, new_high}, std::pair{1, new_low}}) {
      if (word >= state_words) continue;
      Instruction* at_word =
          writer.Compare(index, writer.Splat(writer.Constant(DType::kU64, word), state_words),
                         ComparisonDirection::kEq);
      new_state = writer.Select(at_word, writer.Splat(updated, state_words), new_state);
    }
  }
  return writer.New(Opcode::kTuple, generator.shape(), {new_state, bits});
}

}  // namespace

ThreeFryPairing ThreeFryPairingOf(const Shape& shape) {
  const std::vector<int64_t>& dims = shape.dimensions();
  ThreeFryPairing pairing;
  if (dims.empty()) return pairing;
  int64_t paired = -1;
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()) && paired < 0; ++d) {
    if (dims[d] % 2 == 0) paired = d;
  }
  if (paired < 0) {
    paired = 0;
    for (int64_t d = 1; d < static_cast<int64_t>(dims.size()); ++d) {
      if (dims[d] > dims[paired]) paired = d;
    }
  }
  for (int64_t d = 0; d < static_cast<int64_t>(dims.size()); ++d) {
    if (d < paired) pairing.outer *= dims[d];
    if (d > paired) pairing.inner *= dims[d];
  }
  pairing.size = dims[paired];
  return pairing;
}

absl::Status CheckThreeFryState(const Shape& state, std::string_view op) {
  if (state.IsArray() && state.dtype() == DType::kU64 &&
      state.dimensions() == std::vector<int64_t>{2}) {
    return absl::OkStatus();
  }
  return absl::InvalidArgumentError(fmt::format(
      "{}: rng_three_fry takes a u64[2] state (key, counter), not {}", op, state.ToString()));
}

bool HasRngBitGenerator(const Module& module) {
  for (const auto& instruction : module.entry()->instructions()) {
    if (instruction->opcode() == Opcode::kRngBitGenerator) return true;
  }
  return false;
}

absl::StatusOr<std::unique_ptr<Module>> ExpandRngBitGenerators(const Module& module) {
  return RewriteEntry(module,
                      [](const Instruction& instruction, const std::vector<Instruction*>& operands,
                         const AddInstructionFn& add) -> absl::StatusOr<Instruction*> {
                        if (instruction.opcode() != Opcode::kRngBitGenerator) return nullptr;
                        Writer writer(add);
                        return Expand(writer, instruction, operands[0]);
                      });
}

absl::StatusOr<Instruction*> RngFromBitGenerator(Instruction* a, Instruction* b, const Shape& shape,
                                                 RngDistribution distribution, uint64_t seed,
                                                 const AddInstructionFn& add) {
  const DType type = shape.IsArray() ? shape.dtype() : DType::kPred;
  const bool is_float = IsFloat(type);
  if (!shape.IsArray() || type == DType::kPred || (!is_float && !IsInteger(type))) {
    return absl::InvalidArgumentError(fmt::format("rng makes numbers, not {}", shape.ToString()));
  }
  for (const Instruction* operand : {a, b}) {
    if (!operand->shape().IsArray() || operand->shape().rank() != 0 ||
        operand->shape().dtype() != type) {
      return absl::InvalidArgumentError(fmt::format("rng's bounds must be {}[] scalars, not {}",
                                                    DTypeName(type), operand->shape().ToString()));
    }
  }
  if (distribution == RngDistribution::kNormal && !is_float) {
    return absl::InvalidArgumentError(
        fmt::format("rng_normal makes floating-point numbers, not {}", shape.ToString()));
  }
  Writer writer(add);
  const int64_t count = shape.ElementCount();
  const bool wide = DTypeByteSize(type) == 8;
  const DType bits_type = wide ? DType::kU64 : DType::kU32;
  const int64_t draws = distribution == RngDistribution::kNormal ? 2 * count : count;
  Instruction* state = writer.New(Opcode::kConstant, Shape(DType::kU64, {2}), {});
  state->attributes().literal = Literal::Create<uint64_t>(DType::kU64, {2}, {seed, 0});
  Instruction* generator =
      writer.New(Opcode::kRngBitGenerator,
                 Shape::Tuple({Shape(DType::kU64, {2}), Shape(bits_type, {draws})}), {state});
  generator->attributes().rng_algorithm = RngAlgorithm::kPhilox;
  Instruction* bits = writer.New(Opcode::kGetTupleElement, Shape(bits_type, {draws}), {generator});
  bits->attributes().tuple_index = 1;

  Instruction* value = nullptr;
  if (is_float) {
    // u in [0, 1): the top 24 (53) bits as an integer, exact in f32 (f64), times 2^-24 (2^-53).
    const DType compute = wide ? DType::kF64 : DType::kF32;
    const int precision = wide ? 53 : 24;
    Instruction* top = writer.BinaryConstant(Opcode::kShiftRightLogical, bits,
                                             static_cast<uint64_t>((wide ? 64 : 32) - precision));
    Instruction* scale = writer.Constant(compute, 0);
    scale->attributes().literal->SetFromDouble(0, std::ldexp(1.0, -precision));
    Instruction* uniform =
        writer.Binary(Opcode::kMultiply, writer.Convert(top, compute), writer.Splat(scale, draws));
    Instruction* low = writer.Splat(writer.Convert(a, compute), count);
    Instruction* high = writer.Splat(writer.Convert(b, compute), count);
    if (distribution == RngDistribution::kUniform) {
      value = writer.Binary(
          Opcode::kAdd, low,
          writer.Binary(Opcode::kMultiply, writer.Binary(Opcode::kSubtract, high, low), uniform));
      // Rounding may reach b itself; the interval is half-open.
      value = writer.Select(writer.Compare(value, high, ComparisonDirection::kLt), value, low);
    } else {
      // Box-Muller: sqrt(-2 log(1 - u1)) cos(2 pi u2), with 1 - u1 in (0, 1].
      Instruction* u1 = writer.Slice(uniform, 0, count);
      Instruction* u2 = writer.Slice(uniform, count, count);
      auto splat = [&](double number) {
        Instruction* constant = writer.Constant(compute, 0);
        constant->attributes().literal->SetFromDouble(0, number);
        return writer.Splat(constant, count);
      };
      Instruction* radius = writer.Unary(
          Opcode::kSqrt, writer.Binary(Opcode::kMultiply, splat(-2.0),
                                       writer.Unary(Opcode::kLog, writer.Binary(Opcode::kSubtract,
                                                                                splat(1.0), u1))));
      Instruction* angle = writer.Binary(Opcode::kMultiply, splat(6.283185307179586), u2);
      Instruction* normal =
          writer.Binary(Opcode::kMultiply, radius, writer.Unary(Opcode::kCosine, angle));
      value = writer.Binary(Opcode::kAdd, low, writer.Binary(Opcode::kMultiply, high, normal));
    }
    value = writer.Convert(value, type);
  } else {
    // a + bits mod (b - a), in the unsigned type of the computation's width (wrapping).
    Instruction* low = writer.Convert(a, bits_type);
    Instruction* range = writer.Binary(Opcode::kSubtract, writer.Convert(b, bits_type), low);
    range = writer.Binary(Opcode::kMaximum, range, writer.Constant(bits_type, 1));
    Instruction* offset = writer.Binary(Opcode::kRemainder, bits, writer.Splat(range, count));
    value = writer.Convert(writer.Binary(Opcode::kAdd, writer.Splat(low, count), offset), type);
  }
  if (shape.dimensions() != value->shape().dimensions()) {
    value = writer.New(Opcode::kReshape, shape, {value});
  }
  return value;
}

}  // namespace vkspmd::ir
