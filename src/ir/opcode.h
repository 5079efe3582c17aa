// The op set of the IR (DESIGN.md's wave 1) with XLA's op names, and the comparison directions.
// Classification helpers let the verifier, printer and evaluator treat families alike.
#pragma once

#include <optional>
#include <string_view>

namespace vkspmd::ir {

enum class Opcode {
  // Elementwise unary.
  kNegate,
  kAbs,
  kSign,
  kExp,
  kExpm1,
  kLog,
  kLog1p,
  kSqrt,
  kRsqrt,
  kTanh,
  kLogistic,
  kSine,
  kCosine,
  kFloor,
  kCeil,
  kRoundNearestEven,
  kErf,
  kNot,
  kIsFinite,
  // Elementwise binary.
  kAdd,
  kSubtract,
  kMultiply,
  kDivide,
  kRemainder,
  kMaximum,
  kMinimum,
  kPower,
  kAtan2,
  kAnd,
  kOr,
  kXor,
  kShiftLeft,
  kShiftRightLogical,
  kShiftRightArithmetic,
  // Other elementwise.
  kCompare,
  kSelect,
  kClamp,
  kConvert,
  kCopy,
  kBitcastConvert,   // same-width reinterpretation of the bits (f32 <-> s32/u32, ...)
  kReducePrecision,  // exponent_bits=, mantissa_bits=: rounds floats to a narrower format
  // Leaves.
  kParameter,
  kConstant,
  kIota,
  kPartitionId,
  kReplicaId,
  kRngBitGenerator,
  // Shape ops.
  kBroadcast,
  kReshape,
  kTranspose,
  kSlice,
  kDynamicSlice,
  kDynamicUpdateSlice,
  kConcatenate,
  kPad,
  kReverse,
  // Contractions and reductions.
  kDot,
  kReduce,
  // Indexed reads and writes.
  kGather,
  kScatter,
  kSort,
  // Tuples.
  kTuple,
  kGetTupleElement,
  // Collectives.
  kAllReduce,
  kAllGather,
  kReduceScatter,
  kAllToAll,
  kCollectivePermute,
  // Control flow: condition=/body= and true_computation=/false_computation= or
  // branch_computations= (InstructionAttributes::called). CPU reference only so far.
  kWhile,
  kConditional,
  // custom-call with target Sharding, SPMDFullToShardShape or SPMDShardToFullShape.
  kCustomCall,
};

std::string_view OpcodeName(Opcode opcode);
std::optional<Opcode> OpcodeFromName(std::string_view name);

bool IsElementwiseUnary(Opcode opcode);
bool IsElementwiseBinary(Opcode opcode);
bool IsCollective(Opcode opcode);

enum class ComparisonDirection { kEq, kNe, kLt, kLe, kGt, kGe };
std::string_view ComparisonDirectionName(ComparisonDirection direction);
std::optional<ComparisonDirection> ComparisonDirectionFromName(std::string_view name);

}  // namespace vkspmd::ir
