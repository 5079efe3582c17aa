// GLSL for fused elementwise and index-mapping instructions.
#include "src/codegen/kernel_writer.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <set>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "src/base/status_macros.h"
#include "src/codegen/bit_ops_code.h"
#include "src/codegen/fused_ops.h"
#include "src/codegen/gather_scatter_code.h"
#include "src/codegen/glsl_preamble.h"
#include "src/codegen/sort_code.h"

namespace vkspmd::codegen {
namespace {

using ir::DType;
using ir::Instruction;
using ir::Opcode;

// Elementwise ops that are one GLSL call (the xla_ helpers are in glsl_preamble.h).
const std::map<Opcode, const char*> kFunctionCalls = {
    {Opcode::kSign, "xla_sign"},
    {Opcode::kExp, "exp"},
    {Opcode::kExpm1, "xla_expm1"},
    {Opcode::kLog, "log"},
    {Opcode::kLog1p, "xla_log1p"},
    {Opcode::kSqrt, "sqrt"},
    {Opcode::kRsqrt, "inversesqrt"},
    {Opcode::kTanh, "xla_tanh"},
    {Opcode::kLogistic, "xla_logistic"},
    {Opcode::kSine, "sin"},
    {Opcode::kCosine, "cos"},
    {Opcode::kFloor, "floor"},
    {Opcode::kCeil, "ceil"},
    {Opcode::kRoundNearestEven, "roundEven"},
    {Opcode::kErf, "xla_erf"},
    {Opcode::kRemainder, "xla_rem"},
    {Opcode::kMaximum, "xla_max"},
    {Opcode::kMinimum, "xla_min"},
    {Opcode::kPower, "xla_pow"},
    {Opcode::kAtan2, "atan"},
    {Opcode::kShiftLeft, "xla_shl"},
    {Opcode::kShiftRightLogical, "xla_srl"},
    {Opcode::kShiftRightArithmetic, "xla_sra"},
};

// The elementwise ops (besides infix arithmetic) that have f64 forms in GLSL or the preamble.
const std::set<Opcode> kFloat64Ops = {
    Opcode::kSign,          Opcode::kSqrt,    Opcode::kRsqrt,
    Opcode::kFloor,         Opcode::kCeil,    Opcode::kRoundNearestEven,
    Opcode::kRemainder,     Opcode::kMaximum, Opcode::kMinimum,
    Opcode::kNegate,        Opcode::kAbs,     Opcode::kIsFinite,
    Opcode::kCopy,          Opcode::kDivide,  Opcode::kCompare,
    Opcode::kSelect,        Opcode::kClamp,   Opcode::kConvert,
    Opcode::kBitcastConvert};

// Elementwise ops that are one GLSL infix operator.
const std::map<Opcode, const char*> kInfixOperators = {
    {Opcode::kAdd, "+"}, {Opcode::kSubtract, "-"}, {Opcode::kMultiply, "*"},
    {Opcode::kAnd, "&"}, {Opcode::kOr, "|"},       {Opcode::kXor, "^"},
};

std::string Unsupported(const Instruction& instruction, const std::string& what) {
  return absl::StrCat("the device compiler does not support ", what, " (", instruction.Describe(),
                      ": ", instruction.shape().ToString(), ")");
}

std::string Convert(DType from, DType to, const std::string& x) {
  if (from == to) return x;
  const bool from_float = ir::IsFloat(from);
  if (to == DType::kPred) {
    return absl::StrCat("((", x, ") != ", *GlslType(from), "(0) ? 1u : 0u)");
  }
  // To f16/bf16: a float here, rounded to the type by the caller's WrapToWidth. An f16 NaN is
  // the reference's quiet NaN of its sign (ir::HalfBitsToFloat), whatever its payload.
  if (ir::IsFloat(to)) {
    return absl::StrCat(*GlslType(to), "(", from == DType::kF16 ? "xla_f16_quiet(" + x + ")" : x,
                        ")");
  }
  const int bits = static_cast<int>(ir::DTypeByteSize(to)) * 8;
  if (bits == 64) {
    if (from_float) return absl::StrCat(to == DType::kS64 ? "xla_f2l(" : "xla_f2ul(", x, ")");
    return absl::StrCat(*GlslType(to), "(", x, ")");
  }
  if (ir::IsSignedInteger(to)) {
    if (!from_float) return WrapToWidth(to, absl::StrCat("int(", x, ")"));
    // Float to integer saturates at the target's range (XLA's convert).
    if (bits == 32) return absl::StrCat("xla_f2s(", x, ")");
    return absl::StrCat("clamp(xla_f2s(", x, "), ", -(int64_t{1} << (bits - 1)), ", ",
                        (int64_t{1} << (bits - 1)) - 1, ")");
  }
  if (!from_float) return WrapToWidth(to, absl::StrCat("uint(", x, ")"));
  if (bits == 32) return absl::StrCat("xla_f2u(", x, ")");
  return absl::StrCat("min(xla_f2u(", x, "), ", (int64_t{1} << bits) - 1, "u)");
}

// For a single-operand index mapping (broadcast, transpose, slice, reverse): the operand's
// coordinates, as GLSL expressions of the result's coordinates c0, c1, ...
std::vector<std::string> SourceCoordinates(const Instruction& instruction) {
  const std::vector<int64_t>& out = instruction.shape().dimensions();
  const ir::InstructionAttributes& attributes = instruction.attributes();
  std::vector<std::string> coordinates;
  switch (instruction.opcode()) {
    case Opcode::kBroadcast:
      for (int64_t d : attributes.dimensions) coordinates.push_back(absl::StrCat("c", d));
      break;
    case Opcode::kTranspose:
      coordinates.resize(out.size());
      for (size_t j = 0; j < out.size(); ++j) {
        coordinates[attributes.dimensions[j]] = absl::StrCat("c", j);
      }
      break;
    case Opcode::kSlice:
      for (size_t d = 0; d < out.size(); ++d) {
        const ir::SliceDimension& slice = attributes.slice[d];
        coordinates.push_back(absl::StrCat(slice.start, "u + c", d, " * ", slice.stride, "u"));
      }
      break;
    default:  // reverse
      for (size_t d = 0; d < out.size(); ++d) {
        bool reversed = std::find(attributes.dimensions.begin(), attributes.dimensions.end(),
                                  static_cast<int64_t>(d)) != attributes.dimensions.end();
        coordinates.push_back(reversed ? absl::StrCat(out[d] - 1, "u - c", d)
                                       : absl::StrCat("c", d));
      }
      break;
  }
  return coordinates;
}

}  // namespace

std::string KernelWriter::Coordinates(const std::string& prefix, const std::string& index,
                                      const std::vector<int64_t>& dimensions) {
  std::vector<int64_t> strides = ir::RowMajorStrides(dimensions);
  std::string code;
  for (size_t d = 0; d < dimensions.size(); ++d) {
    absl::StrAppend(&code, "  uint ", prefix, d, " = (", index, " / ", strides[d], "u) % ",
                    std::max<int64_t>(dimensions[d], 1), "u;\n");
  }
  return code;
}

std::string KernelWriter::Size(uint64_t value) {
  if (sizes_.size() >= kMaxPushedSizes) return absl::StrCat(value, "u");
  sizes_.push_back(static_cast<uint32_t>(value));
  return absl::StrCat("sizes.value[", sizes_.size() - 1, "]");
}

int KernelWriter::Bind(int buffer_id) {
  const std::vector<int>& inputs = kernel_.inputs;
  auto slot = std::find(inputs.begin(), inputs.end(), buffer_id);
  if (slot == inputs.end()) {
    unplanned_.insert(buffer_id);
    return 0;
  }
  bound_.insert(buffer_id);
  return static_cast<int>(slot - inputs.begin());
}

namespace {

// The block name of part `part` of a buffer bound as `block` (one part keeps the plain name).
std::string PartBlock(const std::string& block, const BufferPlan& buffer, uint32_t part) {
  return buffer.parts() == 1 ? block : absl::StrCat(block, "p", part);
}

// GLSL selecting `access` (using `data` for the part's array and `j` for the index in it) in
// the part holding element `i` of a buffer split into several bindings. Exactly one part runs the
// access (an if/else chain): a store must not also reach a later part at the same index, where
// another invocation stores its own element.
std::string PartDispatch(const std::string& block, const BufferPlan& buffer,
                         const std::string& access) {
  if (buffer.parts() == 1) {
    return absl::StrCat("  uint j = i;\n  ",
                        absl::StrReplaceAll(access, {{"data", block + ".data"}}), ";\n");
  }
  std::string code = absl::StrCat("  uint j = i % ", buffer.part_elements, "u;\n  uint part = i / ",
                                  buffer.part_elements, "u;\n");
  for (uint32_t part = 0; part < buffer.parts(); ++part) {
    std::string data = PartBlock(block, buffer, part) + ".data";
    std::string condition = part == 0 ? std::string("  if (part == 0u) ")
                            : part + 1 < buffer.parts()
                                ? absl::StrCat("  else if (part == ", part, "u) ")
                                : std::string("  else ");
    absl::StrAppend(&code, condition, "{ ", absl::StrReplaceAll(access, {{"data", data}}), "; }\n");
  }
  return code;
}

}  // namespace

std::string KernelWriter::ReadBuffer(int buffer_id) {
  if (auto found = buffer_reads_.find(buffer_id); found != buffer_reads_.end())
    return found->second;
  int slot = Bind(buffer_id);
  const BufferPlan& buffer = plan_.buffers[buffer_id];
  std::string type = *GlslType(buffer.shape.dtype());
  UseType(buffer.shape.dtype());
  std::string name = absl::StrCat("read", slot);
  if (const TexelFormat texels = TexelReadFormat(plan_, buffer); texels != TexelFormat::kNone) {
    // Element i is component i % 4 of texel i / 4 (f32 as its bits).
    std::string fetch = absl::StrCat("texelFetch(in", slot, "t, int(i >> 2u))[i & 3u]");
    if (texels == TexelFormat::kFloat32) fetch = absl::StrCat("uintBitsToFloat(", fetch, ")");
    absl::StrAppend(&functions_, type, " ", name, "(uint i) {\n  return ",
                    LoadFromStorage(buffer.shape.dtype(), buffer.element_bytes, fetch), ";\n}\n");
    buffer_reads_[buffer_id] = name;
    return name;
  }
  absl::StrAppend(
      &functions_, type, " ", name, "(uint i) {\n",
      PartDispatch(absl::StrCat("in", slot), buffer,
                   absl::StrCat("return ", LoadFromStorage(buffer.shape.dtype(),
                                                           buffer.element_bytes, "data[j]"))),
      "}\n");
  buffer_reads_[buffer_id] = name;
  return name;
}

std::optional<KernelWriter::VectorFunction> KernelWriter::VectorRead(
    const Instruction* instruction) {
  // Only where Value() reads the buffer (not a value this kernel computes and stores itself).
  auto materialized = plan_.materialized.find(instruction);
  if (materialized == plan_.materialized.end()) return std::nullopt;
  const int buffer_id = materialized->second;
  absl::StatusOr<std::string> scalar = Value(instruction);
  auto read = buffer_reads_.find(buffer_id);
  if (!scalar.ok() || read == buffer_reads_.end() || *scalar != read->second) return std::nullopt;
  const BufferPlan& buffer = plan_.buffers[buffer_id];
  if (buffer.parts() != 1) return std::nullopt;
  if (auto found = vector_reads_.find(buffer_id); found != vector_reads_.end()) {
    return found->second;
  }
  const DType dtype = buffer.shape.dtype();
  static const std::map<DType, const char*> kVectorTypes = {
      {DType::kF32, "vec4"}, {DType::kS32, "ivec4"}, {DType::kU32, "uvec4"}};
  auto vector_type = kVectorTypes.find(dtype);
  const bool words = (dtype == DType::kF16 || dtype == DType::kBF16) && buffer.element_bytes == 2;
  if (!words && (vector_type == kVectorTypes.end() || buffer.element_bytes != 4)) {
    return std::nullopt;
  }
  const int slot = Bind(buffer_id);
  const std::string name = absl::StrCat("read", slot, "v");
  VectorFunction function{name, words ? "vec4" : vector_type->second,
                          words ? "uvec2" : vector_type->second};
  const TexelFormat texel_format = TexelReadFormat(plan_, buffer);
  const bool texels = texel_format != TexelFormat::kNone;
  if (words && texels) {
    // Four 16-bit elements are one texel of their bits.
    std::vector<std::string> values;
    for (const char* half : {"w.x", "w.y", "w.z", "w.w"}) {
      values.push_back(LoadFromStorage(dtype, 2, half));
    }
    absl::StrAppend(&functions_, "vec4 ", name, "(uint i) {\n  uvec4 w = texelFetch(in", slot,
                    "t, int(i));\n  return vec4(", absl::StrJoin(values, ", "), ");\n}\n");
  } else if (texels) {
    const bool bits = texel_format == TexelFormat::kFloat32;
    absl::StrAppend(&functions_, function.type, " ", name, "(uint i) {\n  return ",
                    bits ? "uintBitsToFloat(" : "", "texelFetch(in", slot, "t, int(i))",
                    bits ? ")" : "", ";\n}\n");
  } else if (words) {
    // Four 16-bit elements as two 32-bit words, the lower element in the lower half (SPIR-V's
    // little-endian layout of storage buffers), each converted as the scalar read does.
    const std::vector<std::string> halves = {"w.x & 0xffffu", "w.x >> 16u", "w.y & 0xffffu",
                                             "w.y >> 16u"};
    std::vector<std::string> values;
    for (const std::string& half : halves) values.push_back(LoadFromStorage(dtype, 2, half));
    absl::StrAppend(&functions_, "vec4 ", name, "(uint i) {\n  uvec2 w = in", slot,
                    "v.data[i];\n  return vec4(", absl::StrJoin(values, ", "), ");\n}\n");
  } else {
    absl::StrAppend(&functions_, function.type, " ", name, "(uint i) {\n  return in", slot,
                    "v.data[i];\n}\n");
  }
  vector_reads_[buffer_id] = function;
  return function;
}

std::optional<std::string> KernelWriter::VectorStore(size_t output) {
  const std::vector<int> outputs = kernel_.outputs();
  if (output >= outputs.size()) return std::nullopt;
  const BufferPlan& buffer = plan_.buffers[outputs[output]];
  const DType dtype = buffer.shape.dtype();
  if (buffer.parts() != 1 || buffer.element_bytes != 4 ||
      (dtype != DType::kF32 && dtype != DType::kS32 && dtype != DType::kU32)) {
    return std::nullopt;
  }
  std::string& name = vector_stores_[output];
  if (name.empty()) name = absl::StrCat("store", output == 0 ? "" : absl::StrCat(output), "v");
  return name;
}

absl::StatusOr<std::string> KernelWriter::ReadAsVariable(const Instruction* instruction) {
  if (!ReadFromBuffer(instruction)) {
    return absl::InternalError(
        absl::StrCat(instruction->name(), " is not read from a buffer in ", kernel_.name));
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string variable, DeclareRowValue(instruction, /*keep_bits=*/true));
  variable_reads_.insert(instruction);
  return variable;
}

bool KernelWriter::ReadFromBuffer(const Instruction* instruction) const {
  if (!plan_.materialized.count(instruction)) return false;
  // Values this kernel stores besides its root are computed here, not read back.
  bool stored_here = std::find(kernel_.also_stores.begin(), kernel_.also_stores.end(),
                               instruction) != kernel_.also_stores.end();
  for (const KernelPlan& part : kernel_.parts) {
    stored_here = stored_here || std::find(part.also_stores.begin(), part.also_stores.end(),
                                           instruction) != part.also_stores.end();
  }
  return !stored_here;
}

absl::StatusOr<std::string> KernelWriter::Value(const Instruction* instruction, bool compute) {
  if (!compute && variable_reads_.count(instruction)) return row_values_.at(instruction);
  if (!compute && ReadFromBuffer(instruction)) {
    return ReadBuffer(plan_.materialized.at(instruction));
  }
  if (!compute) {
    if (auto found = row_values_.find(instruction); found != row_values_.end()) {
      return found->second;
    }
  }
  auto key = std::make_pair(instruction, compute);
  if (auto found = names_.find(key); found != names_.end()) return found->second;
  if (instruction->shape().IsTuple()) {
    return absl::UnimplementedError(Unsupported(*instruction, "tuple-shaped values here"));
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(instruction->shape().dtype()));
  UseType(instruction->shape().dtype());
  std::string name = absl::StrCat("v", next_function_++);
  const auto cache = row_caches_.find(instruction);
  if (cache != row_caches_.end() && cache->second.load) {
    absl::StrAppend(&functions_, "// ", instruction->name(), " kept from an earlier loop\n", type,
                    " ", name, "(uint i) { return ", cache->second.array, "[row_slot]; }\n");
    names_[key] = name;
    return name;
  }
  VKSPMD_ASSIGN_OR_RETURN(std::string body, Compute(*instruction, name));
  if (cache != row_caches_.end()) {
    // Computed here and kept for the later loops: the function's result is written once more
    // into the array (the same value wherever this loop iteration reads it).
    const std::string computed = absl::StrCat("v", next_function_++);
    absl::StrAppend(&functions_, "// ", instruction->name(), "\n", type, " ", computed,
                    "(uint i) {\n", body, "}\n", type, " ", name, "(uint i) {\n  ", type,
                    " x = ", computed, "(i);\n  ", cache->second.array,
                    "[row_slot] = x;\n  return x;\n}\n");
  } else {
    absl::StrAppend(&functions_, "// ", instruction->name(), "\n", type, " ", name, "(uint i) {\n",
                    body, "}\n");
  }
  names_[key] = name;
  return name;
}

void KernelWriter::EndSharing() {
  for (const Instruction* value : shared_) row_values_.erase(value);
  shared_.clear();
  names_.clear();  // Functions written so far may return the shared variables.
}

absl::StatusOr<std::string> KernelWriter::ShareValues(
    const std::vector<const Instruction*>& roots) {
  EndSharing();
  // The DAG below the roots, each value after its operands.
  std::vector<const Instruction*> order;
  std::set<const Instruction*> visited;
  std::function<void(const Instruction*)> visit = [&](const Instruction* value) {
    if (!visited.insert(value).second) return;
    for (const Instruction* operand : value->operands()) {
      if (!ReadFromBuffer(operand) && !row_values_.count(operand)) visit(operand);
    }
    order.push_back(value);
  };
  std::map<const Instruction*, int> readers;
  std::map<const Instruction*, bool> at_own_index;
  for (const Instruction* root : roots) {
    visit(root);
    readers[root] += 1;
    at_own_index[root] = true;
  }
  // Readers come before their operands here, so a value's every reader is seen before it.
  for (auto value = order.rbegin(); value != order.rend(); ++value) {
    const Instruction* reader = *value;
    for (int64_t k = 0; k < reader->operand_count(); ++k) {
      const Instruction* operand = reader->operand(k);
      if (ReadFromBuffer(operand) || row_values_.count(operand)) continue;
      readers[operand] += 1;  // Per operand slot: multiply(x, x) calls x twice.
      auto own = at_own_index.emplace(operand, true).first;
      own->second = own->second && at_own_index[reader] && ReadsOperandAtOwnIndex(*reader, k);
    }
  }
  std::string code;
  for (const Instruction* value : order) {
    if (readers[value] < 2 || !at_own_index[value] || value->opcode() == Opcode::kConstant) {
      continue;
    }
    // Its operands' variables are set already: `order` has them first.
    VKSPMD_ASSIGN_OR_RETURN(std::string function, Value(value, /*compute=*/true));
    VKSPMD_ASSIGN_OR_RETURN(std::string variable, DeclareRowValue(value, /*keep_bits=*/true));
    absl::StrAppend(&code, "  ", variable, " = ", function, "(i);\n");
    shared_.push_back(value);
  }
  return code;
}

absl::StatusOr<std::string> KernelWriter::DeclareRowCache(const Instruction* instruction,
                                                          int64_t slots) {
  VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(instruction->shape().dtype()));
  UseType(instruction->shape().dtype());
  if (!row_slot_declared_) {
    absl::StrAppend(&functions_, "uint row_slot;\n");
    row_slot_declared_ = true;
  }
  std::string array = absl::StrCat("kept", next_variable_++);
  absl::StrAppend(&functions_, "// ", instruction->name(), " of this invocation's elements\n", type,
                  " ", array, "[", slots, "];\n");
  return array;
}

void KernelWriter::UseRowCaches(std::map<const Instruction*, RowCacheUse> caches) {
  row_caches_ = std::move(caches);
  names_.clear();
}

absl::StatusOr<std::string> KernelWriter::DeclareRowValue(const Instruction* instruction,
                                                          bool keep_bits) {
  VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(instruction->shape().dtype()));
  UseType(instruction->shape().dtype());
  std::string variable = absl::StrCat("row", next_variable_++);
  std::string name = absl::StrCat("v", next_function_++);
  absl::StrAppend(&functions_, "// ", instruction->name(), " of the current row\n", type, " ",
                  variable, ";\n", type, " ", name, "(uint i) { return ",
                  keep_bits ? WrapToWidthKeepingBits(instruction->shape().dtype(), variable)
                            : WrapToWidth(instruction->shape().dtype(), variable),
                  "; }\n");
  row_values_[instruction] = name;
  return variable;
}

std::string KernelWriter::AddShared(const std::string& type, uint32_t count) {
  std::string name = absl::StrCat("shared", next_variable_++);
  absl::StrAppend(&functions_, "shared ", type, " ", name, "[", count, "];\n");
  return name;
}

absl::StatusOr<std::string> KernelWriter::Compute(const Instruction& instruction,
                                                  const std::string& name) {
  (void)name;
  if (IsFusedElementwise(instruction.opcode())) return Elementwise(instruction);
  return IndexMapping(instruction);
}

absl::StatusOr<std::string> KernelWriter::Elementwise(const Instruction& instruction) {
  const Opcode opcode = instruction.opcode();
  std::vector<std::string> operands;
  std::map<const Instruction*, std::string> locals;
  std::string code;
  for (int64_t k = 0; k < instruction.operand_count(); ++k) {
    const Instruction* operand = instruction.operand(k);
    if (!locals.count(operand)) {
      VKSPMD_ASSIGN_OR_RETURN(std::string function, Value(operand));
      std::string index = operand->shape().rank() == 0 ? "0u" : "i";
      std::string local = absl::StrCat("x", locals.size());
      VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(operand->shape().dtype()));
      absl::StrAppend(&code, "  ", type, " ", local, " = ", function, "(", index, ");\n");
      locals[operand] = local;
    }
    operands.push_back(locals[operand]);
  }
  const DType type = instruction.operand(0)->shape().dtype();
  const bool is_float = ir::IsFloat(type);
  if (type == DType::kF64 && !kFloat64Ops.count(opcode) && !kInfixOperators.count(opcode)) {
    return absl::UnimplementedError(Unsupported(
        instruction,
        absl::StrCat(std::string(ir::OpcodeName(opcode)),
                     opcode == Opcode::kReducePrecision
                         ? " on f64 (devices round f32, f16 and bf16)"
                         : " on f64 (GLSL has no double exp, log, pow or trigonometry)")));
  }
  const bool is_unsigned = ir::IsUnsignedInteger(type);
  // Narrow integers are computed in 32 bits; every result is wrapped back to its width.
  const DType result_type = instruction.shape().dtype();
  const std::string& a = operands[0];
  const std::string b = operands.size() > 1 ? operands[1] : "";
  std::string result;
  if (opcode == Opcode::kShiftRightLogical && ir::IsSignedInteger(type) &&
      ir::DTypeByteSize(type) < 4) {
    // A logical shift of the narrow bit pattern, not of its sign extension.
    result = absl::StrCat("xla_srl(int(uint(", a, ") & ", (1u << (ir::DTypeByteSize(type) * 8)) - 1,
                          "u), ", b, ")");
  } else if (auto call = kFunctionCalls.find(opcode); call != kFunctionCalls.end()) {
    result = absl::StrCat(call->second, "(", absl::StrJoin(operands, ", "), ")");
  } else if (auto infix = kInfixOperators.find(opcode); infix != kInfixOperators.end()) {
    result = absl::StrCat(a, " ", infix->second, " ", b);
  }
  if (!result.empty()) {
    if (is_float && (opcode == Opcode::kAnd || opcode == Opcode::kOr || opcode == Opcode::kXor)) {
      return absl::UnimplementedError(Unsupported(instruction, "bitwise ops on floats"));
    }
    if (is_float && kInfixOperators.count(opcode)) {
      // `precise` (SPIR-V NoContraction): a driver may otherwise fuse this product or sum with
      // its neighbour into one fma, rounding once where the reference rounds twice (NVIDIA's
      // did: JAX's uniform draws differed from the reference in the last bit).
      VKSPMD_ASSIGN_OR_RETURN(std::string glsl_type, GlslType(type));
      return absl::StrCat(code, "  precise ", glsl_type, " r = ", result, ";\n  return ",
                          WrapToWidth(result_type, "r"), ";\n");
    }
    return absl::StrCat(code, "  return ", WrapToWidth(result_type, result), ";\n");
  }
  switch (opcode) {
    // Negate and abs of floats change the sign bit alone, as IEEE 754 defines them (NaNs too;
    // f16 and bf16 results are then rounded to the type as the reference's are): as arithmetic,
    // NVIDIA's compiler gave NaN operands the canonical positive NaN. The reference widens an
    // f32 signaling NaN to double first, which quiets it; these keep it signaling.
    case Opcode::kNegate:
      result = is_unsigned ? *GlslType(type) + "(0) - " + a
               : type == DType::kF64
                   ? "packDouble2x32(unpackDouble2x32(" + a + ") ^ uvec2(0u, 0x80000000u))"
               : is_float ? "uintBitsToFloat(floatBitsToUint(" + a + ") ^ 0x80000000u)"
                          : "-" + a;
      break;
    case Opcode::kAbs:
      result = is_unsigned ? a
               : type == DType::kF64
                   ? "packDouble2x32(unpackDouble2x32(" + a + ") & uvec2(0xffffffffu, 0x7fffffffu))"
               : is_float ? "uintBitsToFloat(floatBitsToUint(" + a + ") & 0x7fffffffu)"
                          : "abs(" + a + ")";
      break;
    case Opcode::kNot:
      result = type == DType::kPred ? "(" + a + " == 0u ? 1u : 0u)" : "~" + a;
      break;
    case Opcode::kIsFinite:
      result = "((isinf(" + a + ") || isnan(" + a + ")) ? 0u : 1u)";
      break;
    case Opcode::kCopy:
      result = a;
      break;
    case Opcode::kDivide:
      result = (is_float ? "xla_fdiv(" : "xla_div(") + a + ", " + b + ")";
      break;
    case Opcode::kCompare: {
      static const char* kOperators[] = {"==", "!=", "<", "<=", ">", ">="};
      if (instruction.attributes().total_order && is_float) {
        const std::string key_a = TotalOrderKeyCode(type, a), key_b = TotalOrderKeyCode(type, b);
        if (key_a.empty()) {
          return absl::UnimplementedError(Unsupported(
              instruction, "compare type=TOTALORDER on floats other than f32, f16, bf16"));
        }
        result = "((" + key_a + " " +
                 kOperators[static_cast<int>(instruction.attributes().direction)] + " " + key_b +
                 ") ? 1u : 0u)";
        break;
      }
      result = "((" + a + " " + kOperators[static_cast<int>(instruction.attributes().direction)] +
               " " + b + ") ? 1u : 0u)";
      break;
    }
    case Opcode::kSelect:
      result = "(" + a + " != 0u ? " + b + " : " + operands[2] + ")";
      break;
    case Opcode::kClamp:
      result = "xla_min(xla_max(" + b + ", " + a + "), " + operands[2] + ")";
      break;
    case Opcode::kConvert:
      result = Convert(type, instruction.shape().dtype(), a);
      break;
    case Opcode::kBitcastConvert: {
      result = BitcastConvertCode(type, instruction.shape().dtype(), a);
      if (result.empty()) {
        return absl::UnimplementedError(Unsupported(
            instruction, absl::StrCat("bitcast-convert from ", std::string(ir::DTypeName(type)),
                                      " to ", std::string(ir::DTypeName(result_type)),
                                      " (only between types of one width other than pred)")));
      }
      // Exactly the value of the operand's bits: rounding a 16-bit float again would quiet a
      // signaling NaN the reference keeps.
      if (IsHalfFloat(result_type)) return absl::StrCat(code, "  return ", result, ";\n");
      break;
    }
    case Opcode::kReducePrecision: {
      const std::string reduced =
          ReducePrecisionCode(type, a, "reduced", instruction.attributes().exponent_bits,
                              instruction.attributes().mantissa_bits);
      if (reduced.empty()) {
        return absl::UnimplementedError(Unsupported(
            instruction, absl::StrCat("reduce-precision of ", std::string(ir::DTypeName(type)),
                                      " (f32, f16 and bf16 only)")));
      }
      // Already a value of the type, its NaN kept as the reference keeps it.
      return absl::StrCat(code, reduced, "  return reduced;\n");
    }
    default:
      return absl::UnimplementedError(
          Unsupported(instruction, std::string(ir::OpcodeName(opcode))));
  }
  // A select or copy of 16-bit floats moves an operand's value, which is already one of the
  // type: rounding it again would turn a NaN payload the reference keeps into the canonical NaN.
  if (IsHalfFloat(result_type) && (opcode == Opcode::kSelect || opcode == Opcode::kCopy)) {
    return absl::StrCat(code, "  return ", result, ";\n");
  }
  return absl::StrCat(code, "  return ", WrapToWidth(result_type, result), ";\n");
}

absl::StatusOr<std::string> KernelWriter::IndexMapping(const Instruction& instruction) {
  const std::vector<int64_t>& out = instruction.shape().dimensions();
  std::string code = Coordinates("c", "i", out);
  const ir::InstructionAttributes& attributes = instruction.attributes();
  auto operand_index = [&](const Instruction* operand,
                           const std::vector<std::string>& coordinates) {
    std::vector<int64_t> strides = ir::RowMajorStrides(operand->shape().dimensions());
    std::vector<std::string> terms = {"0u"};
    for (size_t d = 0; d < coordinates.size(); ++d) {
      terms.push_back(absl::StrCat("(", coordinates[d], ") * ", strides[d], "u"));
    }
    return absl::StrJoin(terms, " + ");
  };
  auto call = [&](const Instruction* operand,
                  const std::string& index) -> absl::StatusOr<std::string> {
    VKSPMD_ASSIGN_OR_RETURN(std::string function, Value(operand));
    return absl::StrCat(function, "(", index, ")");
  };
  switch (instruction.opcode()) {
    case Opcode::kConstant:
      if (instruction.shape().rank() != 0) break;
      return absl::StrCat("  return ", GlslLiteral(*attributes.literal, 0), ";\n");
    case Opcode::kIota: {
      VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(instruction.shape().dtype()));
      return absl::StrCat(code, "  return ",
                          WrapToWidth(instruction.shape().dtype(),
                                      absl::StrCat(type, "(c", attributes.iota_dimension, ")")),
                          ";\n");
    }
    case Opcode::kPartitionId:
      return absl::StrCat("  return ", plan_.ids.partition, "u;\n");
    case Opcode::kReplicaId:
      return absl::StrCat("  return ", plan_.ids.replica, "u;\n");
    case Opcode::kReshape: {
      VKSPMD_ASSIGN_OR_RETURN(std::string value, call(instruction.operand(0), "i"));
      return absl::StrCat("  return ", value, ";\n");
    }
    case Opcode::kBroadcast:
      if (instruction.operand(0)->shape().rank() == 0) {
        // A scalar everywhere: no coordinates, so the kernel's text does not depend on the shape.
        VKSPMD_ASSIGN_OR_RETURN(std::string value, call(instruction.operand(0), "0u"));
        return absl::StrCat("  return ", value, ";\n");
      }
      [[fallthrough]];
    case Opcode::kTranspose:
    case Opcode::kSlice:
    case Opcode::kReverse: {
      VKSPMD_ASSIGN_OR_RETURN(
          std::string value,
          call(instruction.operand(0),
               operand_index(instruction.operand(0), SourceCoordinates(instruction))));
      return absl::StrCat(code, "  return ", value, ";\n");
    }
    case Opcode::kPad: {
      const Instruction* operand = instruction.operand(0);
      std::vector<std::string> coordinates;
      for (size_t d = 0; d < out.size(); ++d) {
        const ir::PaddingDimension& pad = attributes.padding[d];
        absl::StrAppend(&code, "  int p", d, " = int(c", d, ") - (", pad.low, ");\n",
                        "  bool inside", d, " = p", d, " >= 0 && p", d, " % ", pad.interior + 1,
                        " == 0 && p", d, " / ", pad.interior + 1, " < ",
                        operand->shape().dimension(d), ";\n");
        coordinates.push_back(absl::StrCat("uint(max(p", d, ", 0) / ", pad.interior + 1, ")"));
      }
      std::vector<std::string> inside = {"true"};
      for (size_t d = 0; d < out.size(); ++d) inside.push_back(absl::StrCat("inside", d));
      VKSPMD_ASSIGN_OR_RETURN(std::string value,
                              call(operand, operand_index(operand, coordinates)));
      VKSPMD_ASSIGN_OR_RETURN(std::string padding, call(instruction.operand(1), "0u"));
      return absl::StrCat(code, "  if (", absl::StrJoin(inside, " && "), ") return ", value,
                          ";\n  return ", padding, ";\n");
    }
    case Opcode::kConcatenate: {
      const int64_t axis = attributes.dimensions.at(0);
      int64_t offset = 0;
      for (int64_t k = 0; k < instruction.operand_count(); ++k) {
        const Instruction* operand = instruction.operand(k);
        std::vector<std::string> coordinates;
        for (size_t d = 0; d < out.size(); ++d) {
          coordinates.push_back(static_cast<int64_t>(d) == axis
                                    ? absl::StrCat("c", d, " - ", offset, "u")
                                    : absl::StrCat("c", d));
        }
        int64_t end = offset + operand->shape().dimension(axis);
        VKSPMD_ASSIGN_OR_RETURN(std::string value,
                                call(operand, operand_index(operand, coordinates)));
        absl::StrAppend(&code, "  if (c", axis, " < ", end, "u) return ", value, ";\n");
        offset = end;
      }
      VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(instruction.shape().dtype()));
      return absl::StrCat(code, "  return ", type, "(0);\n");
    }
    case Opcode::kDynamicSlice:
    case Opcode::kDynamicUpdateSlice: {
      const bool update = instruction.opcode() == Opcode::kDynamicUpdateSlice;
      const Instruction* operand = instruction.operand(0);
      const int64_t first_index = update ? 2 : 1;
      const std::vector<int64_t>& window =
          update ? instruction.operand(1)->shape().dimensions() : attributes.dynamic_slice_sizes;
      for (size_t d = 0; d < out.size(); ++d) {
        const ir::DType index_type = instruction.operand(first_index + d)->shape().dtype();
        VKSPMD_ASSIGN_OR_RETURN(std::string start,
                                call(instruction.operand(first_index + d), "0u"));
        VKSPMD_ASSIGN_OR_RETURN(std::string type, GlslType(index_type));
        // Clamped in the index's own type, as the reference does: through int, a u32 start of
        // 2^31 or more turned negative (clamped to 0, not to the last window), and a 64-bit
        // one lost its high bits.
        const std::string last =
            absl::StrCat(type, "(", operand->shape().dimension(d) - window[d], ")");
        absl::StrAppend(&code, "  uint s", d, " = uint(",
                        ir::IsUnsignedInteger(index_type)
                            ? absl::StrCat("min(", start, ", ", last, ")")
                            : absl::StrCat("clamp(", start, ", ", type, "(0), ", last, ")"),
                        ");\n");
      }
      if (!update) {
        std::vector<std::string> coordinates;
        for (size_t d = 0; d < out.size(); ++d)
          coordinates.push_back(absl::StrCat("s", d, " + c", d));
        VKSPMD_ASSIGN_OR_RETURN(std::string value,
                                call(operand, operand_index(operand, coordinates)));
        return absl::StrCat(code, "  return ", value, ";\n");
      }
      std::vector<std::string> inside = {"true"};
      std::vector<std::string> coordinates;
      for (size_t d = 0; d < out.size(); ++d) {
        inside.push_back(
            absl::StrCat("c", d, " >= s", d, " && c", d, " < s", d, " + ", window[d], "u"));
        coordinates.push_back(absl::StrCat("c", d, " - s", d));
      }
      const Instruction* patch = instruction.operand(1);
      VKSPMD_ASSIGN_OR_RETURN(std::string patched, call(patch, operand_index(patch, coordinates)));
      VKSPMD_ASSIGN_OR_RETURN(std::string original, call(operand, "i"));
      return absl::StrCat(code, "  if (", absl::StrJoin(inside, " && "), ") return ", patched,
                          ";\n  return ", original, ";\n");
    }
    case Opcode::kGather:
      return GatherCode(instruction, *this);
    case Opcode::kScatter:
      return ScatterCode(instruction, *this);
    case Opcode::kSort:
      return SortCode(instruction, 0, *this);
    case Opcode::kGetTupleElement:
      if (instruction.operand(0)->opcode() != Opcode::kSort) break;
      return SortCode(*instruction.operand(0), attributes.tuple_index, *this);
    default:
      break;
  }
  return absl::UnimplementedError(
      Unsupported(instruction, std::string(ir::OpcodeName(instruction.opcode()))));
}

absl::StatusOr<std::string> KernelWriter::Finish(const std::string& main_body) {
  if (!unplanned_.empty() || bound_.size() != kernel_.inputs.size()) {
    return absl::InternalError(absl::StrCat("kernel ", kernel_.name, " reads buffers {",
                                            absl::StrJoin(bound_, ", "), "} and unplanned {",
                                            absl::StrJoin(unplanned_, ", "), "}; its plan binds {",
                                            absl::StrJoin(kernel_.inputs, ", "), "}"));
  }
  const int output_buffer = kernel_.output;
  const uint32_t local_size = kernel_.local_size;
  const std::vector<int>& inputs = kernel_.inputs;
  // A buffer's storage type: its GLSL type, or the narrow type its elements have in memory.
  auto storage = [&](int buffer) {
    return StorageType(plan_.buffers[buffer].shape.dtype(), plan_.buffers[buffer].element_bytes);
  };
  bool bytes = plan_.buffers[output_buffer].element_bytes == 1;
  bool shorts = plan_.buffers[output_buffer].element_bytes == 2;
  for (int input : inputs) shorts |= plan_.buffers[input].element_bytes == 2;
  std::string declarations;
  int binding = 0;
  auto declare = [&](int buffer, const std::string& qualifier, const std::string& block) {
    for (uint32_t part = 0; part < plan_.buffers[buffer].parts(); ++part) {
      std::string name = PartBlock(block, plan_.buffers[buffer], part);
      absl::StrAppend(&declarations, "layout(std430, set = 0, binding = ", binding++, ") ",
                      qualifier, " buffer B", name, " { ", storage(buffer), " data[]; } ", name,
                      ";\n");
    }
  };
  for (size_t slot = 0; slot < inputs.size(); ++slot) {
    bytes |= plan_.buffers[inputs[slot]].element_bytes == 1;
    const TexelFormat texels = TexelReadFormat(plan_, plan_.buffers[inputs[slot]]);
    if (texels != TexelFormat::kNone) {
      const bool is_signed = texels == TexelFormat::kInt32 || texels == TexelFormat::kInt16 ||
                             texels == TexelFormat::kInt8;
      absl::StrAppend(&declarations, "layout(set = 0, binding = ", binding++, ") uniform ",
                      is_signed ? "i" : "u", "samplerBuffer in", slot, "t;\n");
      continue;
    }
    if (auto vector = vector_reads_.find(inputs[slot]); vector != vector_reads_.end()) {
      // The same binding as the scalar block declared next (one part: VectorRead checked).
      absl::StrAppend(&declarations, "layout(std430, set = 0, binding = ", binding,
                      ") readonly buffer Bin", slot, "v { ", vector->second.storage,
                      " data[]; } in", slot, "v;\n");
    }
    declare(inputs[slot], "readonly", absl::StrCat("in", slot));
  }
  // The output, then the values multi-output fusion added (store1, store2, ...).
  std::string store;  // After the preamble, whose helpers it may call.
  const std::vector<int> outputs = kernel_.outputs();
  for (size_t k = 0; k < outputs.size(); ++k) {
    const BufferPlan& output = plan_.buffers[outputs[k]];
    const std::string block = k == 0 ? "out_buffer" : absl::StrCat("out", k);
    if (auto vector = vector_stores_.find(k); vector != vector_stores_.end()) {
      // The same binding as the scalar block declared next (one part: VectorStore checked).
      const std::string type = Vec4Type(*GlslType(output.shape.dtype()));
      absl::StrAppend(&declarations, "layout(std430, set = 0, binding = ", binding,
                      ") writeonly buffer B", block, "v { ", type, " data[]; } ", block, "v;\n");
      absl::StrAppend(&store, "void ", vector->second, "(uint i, ", type, " value) { ", block,
                      "v.data[i] = value; }\n");
    }
    declare(outputs[k], "writeonly", block);
    bytes |= output.element_bytes == 1;
    shorts |= output.element_bytes == 2;
    UseType(output.shape.dtype());
    absl::StrAppend(
        &store, "void store", k == 0 ? "" : absl::StrCat(k), "(uint i, ",
        *GlslType(output.shape.dtype()), " value) {\n",
        PartDispatch(block, output,
                     absl::StrCat("data[j] = ", StoreToStorage(output.shape.dtype(),
                                                               output.element_bytes, "value"))),
        "}\n");
  }
  std::string extensions = bytes ? "#extension GL_EXT_shader_8bit_storage : require\n"
                                   "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : "
                                   "require\n"
                                 : "";
  if (!sizes_.empty()) {
    absl::StrAppend(&declarations, "layout(push_constant) uniform Sizes { uint value[",
                    sizes_.size(), "]; } sizes;\n");
  }
  UseType(plan_.buffers[output_buffer].shape.dtype());
  const bool int64 = types_.count(DType::kS64) || types_.count(DType::kU64);
  const bool float64 = types_.count(DType::kF64) > 0;
  std::string preamble = kGlslPreamble;
  if (int64) {
    absl::StrAppend(&extensions,
                    "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n");
    absl::StrAppend(&preamble, kGlslPreambleInt64);
  }
  if (float64) absl::StrAppend(&preamble, kGlslPreambleFloat64);
  if (int64 && float64) absl::StrAppend(&preamble, kGlslPreambleFloat64Int64);
  if (types_.count(DType::kF16) || types_.count(DType::kBF16)) {
    absl::StrAppend(&preamble, kGlslPreambleHalf);
  }
  if (shorts) {
    absl::StrAppend(&extensions, "#extension GL_EXT_shader_16bit_storage : require\n",
                    "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n");
  }
  if (subgroups_) {
    absl::StrAppend(&extensions, "#extension GL_KHR_shader_subgroup_basic : require\n",
                    "#extension GL_KHR_shader_subgroup_shuffle : require\n");
  }
  if (cooperative_matrix_) {
    absl::StrAppend(
        &extensions, subgroups_ ? "" : "#extension GL_KHR_shader_subgroup_basic : require\n",
        "#extension GL_EXT_shader_explicit_arithmetic_types_float16 : require\n",
        cooperative_matrix_emulated_ ? ""
                                     : "#extension GL_KHR_memory_scope_semantics : require\n"
                                       "#extension GL_NV_cooperative_matrix : require\n");
  }
  if (plan_.preserve_float32_denormals) {
    // DenormPreserve (execution mode 4459, capability 4464) for 32-bit floats.
    absl::StrAppend(&extensions, "#extension GL_EXT_spirv_intrinsics : require\n",
                    "spirv_execution_mode(capabilities = [4464], 4459, 32);\n");
  }
  return absl::StrCat("#version 460\n", extensions, "layout(local_size_x = ", local_size, ") in;\n",
                      declarations, preamble, store, functions_, "void main() {\n",
                      "  uint i = (gl_WorkGroupID.y * gl_NumWorkGroups.x + gl_WorkGroupID.x) * ",
                      local_size, "u + gl_LocalInvocationID.x;\n", main_body, "}\n");
}

}  // namespace vkspmd::codegen
