// Op names as XLA spells them, and the op family predicates.
// The name table is the single place an op's text form is defined.
#include "src/ir/opcode.h"

#include <array>
#include <utility>

namespace vkspmd::ir {
namespace {

constexpr std::pair<Opcode, std::string_view> kOpcodeNames[] = {
    {Opcode::kNegate, "negate"},
    {Opcode::kAbs, "abs"},
    {Opcode::kSign, "sign"},
    {Opcode::kExp, "exponential"},
    {Opcode::kExpm1, "exponential-minus-one"},
    {Opcode::kLog, "log"},
    {Opcode::kLog1p, "log-plus-one"},
    {Opcode::kSqrt, "sqrt"},
    {Opcode::kRsqrt, "rsqrt"},
    {Opcode::kTanh, "tanh"},
    {Opcode::kLogistic, "logistic"},
    {Opcode::kSine, "sine"},
    {Opcode::kCosine, "cosine"},
    {Opcode::kFloor, "floor"},
    {Opcode::kCeil, "ceil"},
    {Opcode::kRoundNearestEven, "round-nearest-even"},
    {Opcode::kErf, "erf"},
    {Opcode::kNot, "not"},
    {Opcode::kIsFinite, "is-finite"},
    {Opcode::kAdd, "add"},
    {Opcode::kSubtract, "subtract"},
    {Opcode::kMultiply, "multiply"},
    {Opcode::kDivide, "divide"},
    {Opcode::kRemainder, "remainder"},
    {Opcode::kMaximum, "maximum"},
    {Opcode::kMinimum, "minimum"},
    {Opcode::kPower, "power"},
    {Opcode::kAtan2, "atan2"},
    {Opcode::kAnd, "and"},
    {Opcode::kOr, "or"},
    {Opcode::kXor, "xor"},
    {Opcode::kShiftLeft, "shift-left"},
    {Opcode::kShiftRightLogical, "shift-right-logical"},
    {Opcode::kShiftRightArithmetic, "shift-right-arithmetic"},
    {Opcode::kCompare, "compare"},
    {Opcode::kSelect, "select"},
    {Opcode::kClamp, "clamp"},
    {Opcode::kConvert, "convert"},
    {Opcode::kCopy, "copy"},
    {Opcode::kBitcastConvert, "bitcast-convert"},
    {Opcode::kReducePrecision, "reduce-precision"},
    {Opcode::kParameter, "parameter"},
    {Opcode::kConstant, "constant"},
    {Opcode::kIota, "iota"},
    {Opcode::kPartitionId, "partition-id"},
    {Opcode::kReplicaId, "replica-id"},
    {Opcode::kRngBitGenerator, "rng-bit-generator"},
    {Opcode::kBroadcast, "broadcast"},
    {Opcode::kReshape, "reshape"},
    {Opcode::kTranspose, "transpose"},
    {Opcode::kSlice, "slice"},
    {Opcode::kDynamicSlice, "dynamic-slice"},
    {Opcode::kDynamicUpdateSlice, "dynamic-update-slice"},
    {Opcode::kConcatenate, "concatenate"},
    {Opcode::kPad, "pad"},
    {Opcode::kReverse, "reverse"},
    {Opcode::kDot, "dot"},
    {Opcode::kReduce, "reduce"},
    {Opcode::kGather, "gather"},
    {Opcode::kScatter, "scatter"},
    {Opcode::kSort, "sort"},
    {Opcode::kTuple, "tuple"},
    {Opcode::kGetTupleElement, "get-tuple-element"},
    {Opcode::kAllReduce, "all-reduce"},
    {Opcode::kAllGather, "all-gather"},
    {Opcode::kReduceScatter, "reduce-scatter"},
    {Opcode::kAllToAll, "all-to-all"},
    {Opcode::kCollectivePermute, "collective-permute"},
    {Opcode::kWhile, "while"},
    {Opcode::kConditional, "conditional"},
    {Opcode::kCustomCall, "custom-call"},
};

constexpr std::pair<ComparisonDirection, std::string_view> kDirectionNames[] = {
    {ComparisonDirection::kEq, "EQ"}, {ComparisonDirection::kNe, "NE"},
    {ComparisonDirection::kLt, "LT"}, {ComparisonDirection::kLe, "LE"},
    {ComparisonDirection::kGt, "GT"}, {ComparisonDirection::kGe, "GE"},
};

}  // namespace

std::string_view OpcodeName(Opcode opcode) {
  for (const auto& [candidate, name] : kOpcodeNames) {
    if (candidate == opcode) return name;
  }
  return "unknown";
}

std::optional<Opcode> OpcodeFromName(std::string_view name) {
  for (const auto& [opcode, candidate] : kOpcodeNames) {
    if (candidate == name) return opcode;
  }
  return std::nullopt;
}

bool IsElementwiseUnary(Opcode opcode) {
  return opcode >= Opcode::kNegate && opcode <= Opcode::kIsFinite;
}

bool IsElementwiseBinary(Opcode opcode) {
  return opcode >= Opcode::kAdd && opcode <= Opcode::kShiftRightArithmetic;
}

bool IsCollective(Opcode opcode) {
  return opcode >= Opcode::kAllReduce && opcode <= Opcode::kCollectivePermute;
}

std::string_view ComparisonDirectionName(ComparisonDirection direction) {
  for (const auto& [candidate, name] : kDirectionNames) {
    if (candidate == direction) return name;
  }
  return "EQ";
}

std::optional<ComparisonDirection> ComparisonDirectionFromName(std::string_view name) {
  for (const auto& [direction, candidate] : kDirectionNames) {
    if (candidate == name) return direction;
  }
  return std::nullopt;
}

}  // namespace vkspmd::ir
