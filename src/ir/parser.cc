// HLO module parser: module header and attributes, computations, instructions and their
// attributes. Value grammars come from TextReader (shapes, literals, shardings) and
// attribute_values.h (padding, slice, source_target_pairs; which op takes which attribute).
#include "src/ir/parser.h"

#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "src/base/formatting.h"
#include "src/base/status_macros.h"
#include "src/ir/attribute_values.h"
#include "src/ir/backend_config.h"
#include "src/ir/gather_attributes.h"
#include "src/ir/inline_calls.h"
#include "src/ir/rng_expansion.h"
#include "src/ir/text_reader.h"
#include "src/ir/top_k.h"
#include "src/ir/tuple_collectives.h"
#include "src/ir/verifier.h"

namespace vkspmd::ir {
namespace {

const absl::flat_hash_set<std::string_view>& IgnoredModuleAttributes() {
  static const auto* names =
      new absl::flat_hash_set<std::string_view>{"entry_computation_layout",
                                                "is_scheduled",
                                                "allow_spmd_sharding_propagation_to_output",
                                                "allow_spmd_sharding_propagation_to_parameters",
                                                "frontend_attributes",
                                                "buffer_donor",
                                                "spmd_output_sharding",
                                                "spmd_parameters_shardings",
                                                "alias_passthrough_params",
                                                "cross_program_prefetches",
                                                "origin_module_name"};
  return *names;
}

constexpr int64_t kMaxParameterNumber = 1 << 16;

// Ops XLA prints that the IR has no op for: each is rewritten into IR ops as it is read.
enum class FrontEndOp {
  kFusion,               // calls=: inlined
  kCall,                 // to_apply=: inlined
  kAsyncStart,           // calls= a computation wrapping one op: inlined, read by its -done
  kMap,                  // to_apply= a scalar computation: expanded elementwise
  kBitcast,              // transposes and a reshape, from the layouts
  kOptimizationBarrier,  // its operand
  kCopyStart,            // copy, read by copy-done
  kAsyncDone,            // *-done, async-update: the op its start became
  kRng,                  // ops over an rng-bit-generator (ir/rng_expansion.h)
  kTopK,                 // a sort of (values, iota) and slices (ir/top_k.h)
};

struct FrontEndOpName {
  std::string_view name;
  FrontEndOp op;
};

constexpr FrontEndOpName kFrontEndOps[] = {
    {"fusion", FrontEndOp::kFusion},
    {"call", FrontEndOp::kCall},
    {"async-start", FrontEndOp::kAsyncStart},
    {"map", FrontEndOp::kMap},
    {"bitcast", FrontEndOp::kBitcast},
    {"opt-barrier", FrontEndOp::kOptimizationBarrier},
    {"optimization-barrier", FrontEndOp::kOptimizationBarrier},
    {"copy-start", FrontEndOp::kCopyStart},
    {"copy-done", FrontEndOp::kAsyncDone},
    {"async-update", FrontEndOp::kAsyncDone},
    {"async-done", FrontEndOp::kAsyncDone},
    {"all-reduce-done", FrontEndOp::kAsyncDone},
    {"all-gather-done", FrontEndOp::kAsyncDone},
    {"collective-permute-done", FrontEndOp::kAsyncDone},
    {"rng", FrontEndOp::kRng},
    {"topk", FrontEndOp::kTopK},
};

// all-reduce-start and the like: the synchronous op, whose result is the start's shape
// (all-reduce-start) or element 1 of it ((operand, result, contexts...)).
struct CollectiveStart {
  std::string_view name;
  Opcode opcode;
  std::optional<int64_t> result_element;
};

constexpr CollectiveStart kCollectiveStarts[] = {
    {"all-reduce-start", Opcode::kAllReduce, std::nullopt},
    {"all-gather-start", Opcode::kAllGather, 1},
    {"collective-permute-start", Opcode::kCollectivePermute, 1},
};

template <typename Entry, size_t N>
const Entry* FindByName(const Entry (&table)[N], std::string_view name) {
  for (const Entry& entry : table) {
    if (entry.name == name) return &entry;
  }
  return nullptr;
}

// The attributes a front-end op may carry.
struct FrontEndAttributes {
  Computation* callee = nullptr;
  std::optional<RngDistribution> distribution;  // rng
  std::optional<int64_t> k;                     // topk
  bool largest = true;                          // topk
  std::vector<int64_t> dimensions;
  bool has_dimensions = false;
  std::optional<Sharding> sharding;
};

class ModuleParser {
 public:
  explicit ModuleParser(std::string_view text) : reader_(text) {}

  absl::StatusOr<std::unique_ptr<Module>> Parse() {
    // XLA also reads computations without the "HloModule name, attributes" line; the module is
    // then named after its entry computation.
    if (reader_.IsWord("HloModule")) {
      reader_.Advance();
      VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadName());
      module_ = std::make_unique<Module>(name);
      while (reader_.TryConsume(",")) VKSPMD_RETURN_IF_ERROR(ParseModuleAttribute());
    }
    while (!reader_.AtEnd()) VKSPMD_RETURN_IF_ERROR(ParseComputation());
    if (computations_.empty()) return reader_.Expected("a computation");
    if (entry_ == nullptr) entry_ = computations_.back().get();
    if (module_ == nullptr) module_ = std::make_unique<Module>(entry_->name());
    // Computations only ever inlined are dropped; those still called (reducers) are kept.
    absl::flat_hash_set<const Computation*> called = {entry_};
    for (auto it = computations_.rbegin(); it != computations_.rend(); ++it) {
      if (!called.contains(it->get())) continue;
      for (const auto& instruction : (*it)->instructions()) {
        for (const Computation* callee : instruction->attributes().CalledComputations()) {
          called.insert(callee);
        }
      }
    }
    for (auto& computation : computations_) {
      if (inlined_.contains(computation.get()) && !called.contains(computation.get())) continue;
      Computation* added = module_->AddComputation(std::move(computation));
      if (added == entry_) module_->set_entry(added);
    }
    return std::move(module_);
  }

 private:
  absl::Status ParseModuleAttribute() {
    const Token name_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadWord("a module attribute"));
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
    if (name == "input_output_alias") return ParseAliases();
    if (name == "replica_count" || name == "num_partitions") {
      const Token value_token = reader_.current();
      VKSPMD_ASSIGN_OR_RETURN(int64_t count, reader_.ReadInteger());
      if (count < 1 || count > (1 << 20))
        return reader_.ErrorAt(value_token, "count must be in 1..2^20");
      if (name == "replica_count") {
        module_->set_replica_count(count);
      } else {
        module_->set_partition_count(count);
      }
      return absl::OkStatus();
    }
    if (IgnoredModuleAttributes().contains(name)) return reader_.SkipValue();
    return reader_.ErrorAt(name_token, fmt::format("unsupported module attribute {}", name));
  }

  // { {0}: (0, {}, may-alias), {1}: (1, {}) }
  absl::Status ParseAliases() {
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("{"));
    if (reader_.TryConsume("}")) return absl::OkStatus();
    do {
      InputOutputAlias alias;
      VKSPMD_ASSIGN_OR_RETURN(alias.output_index, reader_.ReadIntegerList());
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(":"));
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
      VKSPMD_ASSIGN_OR_RETURN(alias.parameter_number, reader_.ReadInteger());
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(","));
      VKSPMD_ASSIGN_OR_RETURN(alias.parameter_index, reader_.ReadIntegerList());
      if (reader_.TryConsume(",")) {
        VKSPMD_ASSIGN_OR_RETURN(std::string kind, reader_.ReadWord("may-alias or must-alias"));
        if (kind != "may-alias" && kind != "must-alias") {
          return reader_.Error(fmt::format("unknown alias kind '{}'", kind));
        }
        alias.must_alias = kind == "must-alias";
      }
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
      module_->input_output_aliases().push_back(std::move(alias));
    } while (reader_.TryConsume(","));
    return reader_.ExpectPunct("}");
  }

  absl::Status ParseComputation() {
    bool is_entry = false;
    if (reader_.IsWord("ENTRY")) {
      is_entry = true;
      reader_.Advance();
    }
    const Token name_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadName());
    if (Computation* taken = FindComputation(name); taken != nullptr) {
      if (!generated_computations_.contains(taken)) {
        return reader_.ErrorAt(name_token, fmt::format("duplicate computation %{}", name));
      }
      taken->set_name(UniqueComputationName(name));  // a comparator a rewrite made yields
    }
    if (reader_.IsPunct("(")) VKSPMD_RETURN_IF_ERROR(SkipSignature());
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("{"));
    auto computation = std::make_unique<Computation>(name);
    names_.clear();
    parameter_numbers_.clear();
    async_starts_.clear();
    generated_.clear();
    generated_names_.clear();
    layouts_.clear();
    rewritten_ = false;
    Instruction* root = nullptr;
    while (!reader_.TryConsume("}")) {
      if (reader_.AtEnd()) return reader_.Expected("'}'");
      VKSPMD_RETURN_IF_ERROR(ParseInstruction(*computation, root));
    }
    if (computation->instructions().empty()) {
      return reader_.ErrorAt(name_token, fmt::format("computation %{} is empty", name));
    }
    for (int64_t i = 0; i < computation->parameter_count(); ++i) {
      if (computation->parameter(i) == nullptr) {
        return reader_.ErrorAt(name_token,
                               fmt::format("computation %{} has no parameter({})", name, i));
      }
    }
    computation->set_root(root);
    // Rewrites leave what nothing reads (the tuple of an inlined fusion whose elements are read
    // directly, the operand of a bitcast): drop it.
    if (rewritten_) computation->RemoveUnreachable();
    computations_.push_back(std::move(computation));
    if (is_entry) {
      if (entry_ != nullptr) return reader_.ErrorAt(name_token, "second ENTRY computation");
      entry_ = computations_.back().get();
    }
    return absl::OkStatus();
  }

  // "(p0: f32[8], p1: s32[]) -> f32[8]": repeated by the parameter instructions, so only checked
  // for syntax.
  absl::Status SkipSignature() {
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
    if (!reader_.TryConsume(")")) {
      do {
        VKSPMD_RETURN_IF_ERROR(reader_.ReadName().status());
        VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(":"));
        VKSPMD_RETURN_IF_ERROR(reader_.ReadShape().status());
      } while (reader_.TryConsume(","));
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("->"));
    return reader_.ReadShape().status();
  }

  absl::Status ParseInstruction(Computation& computation, Instruction*& root) {
    bool is_root = false;
    if (reader_.IsWord("ROOT")) {
      is_root = true;
      reader_.Advance();
    }
    const Token name_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadName());
    if (names_.contains(name) || async_starts_.contains(name)) {
      return reader_.ErrorAt(name_token, fmt::format("duplicate instruction %{}", name));
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
    const Token shape_token = reader_.current();
    ParsedLayout layout;
    VKSPMD_ASSIGN_OR_RETURN(Shape shape, reader_.ReadShape(&layout));
    const Token opcode_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string opcode_name, reader_.ReadWord("an op name"));
    std::optional<Opcode> opcode = OpcodeFromName(opcode_name);
    const CollectiveStart* start = FindByName(kCollectiveStarts, opcode_name);
    if (!opcode.has_value() && start == nullptr) {
      const FrontEndOpName* front_end = FindByName(kFrontEndOps, opcode_name);
      if (front_end == nullptr) {
        return reader_.ErrorAt(opcode_token, fmt::format("unsupported op {}", opcode_name));
      }
      rewritten_ = true;
      Instruction* result = nullptr;
      VKSPMD_RETURN_IF_ERROR(ParseFrontEndInstruction(front_end->op, name_token, name, shape,
                                                      layout, opcode_token, computation, result));
      return SetRoot(is_root, name_token, result, root);
    }
    if (start != nullptr) {
      rewritten_ = true;
      opcode = start->opcode;
      if (start->result_element.has_value()) {
        if (!shape.IsTuple() ||
            static_cast<int64_t>(shape.tuple_elements().size()) <= *start->result_element) {
          return reader_.ErrorAt(shape_token,
                                 fmt::format("{} must be a tuple (operand, result, ...), not {}",
                                             opcode_name, shape.ToString()));
        }
        shape = Shape(shape.tuple_elements()[*start->result_element]);
      }
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
    std::vector<Instruction*> operands;
    InstructionAttributes attributes;
    if (*opcode == Opcode::kParameter) {
      VKSPMD_RETURN_IF_ERROR(ParseParameterNumber(attributes));
    } else if (*opcode == Opcode::kConstant) {
      VKSPMD_ASSIGN_OR_RETURN(attributes.literal, reader_.ReadLiteral(shape));
      VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
    } else {
      VKSPMD_ASSIGN_OR_RETURN(operands, ParseOperands());
    }
    auto instruction = std::make_unique<Instruction>(*opcode, shape, std::move(operands));
    instruction->set_attributes(std::move(attributes));
    instruction->set_name(name);
    instruction->set_location({name_token.line, name_token.column});
    while (reader_.TryConsume(",")) VKSPMD_RETURN_IF_ERROR(ParseAttribute(*instruction));
    if (IsTupleCollective(*instruction)) {
      return SplitCollective(computation, *instruction, name_token, start != nullptr, is_root,
                             std::move(layout), root);
    }
    if (*opcode == Opcode::kCustomCall && instruction->attributes().custom_call_target == "TopK") {
      rewritten_ = true;
      VKSPMD_ASSIGN_OR_RETURN(Instruction * top,
                              CustomCallTopK(computation, *instruction, name_token));
      layouts_[name] = std::move(layout);
      return SetRoot(is_root, name_token,
                     Bind(computation, name, top, instruction->sharding(), name_token), root);
    }
    VKSPMD_RETURN_IF_ERROR(CheckRandomCallees(computation, *instruction, name_token));
    // get-tuple-element of the tuple an inlined computation returned: the element itself.
    if (*opcode == Opcode::kGetTupleElement && instruction->operand_count() == 1) {
      Instruction* tuple = instruction->operand(0);
      const int64_t index = instruction->attributes().tuple_index;
      if (tuple->opcode() == Opcode::kTuple && generated_.contains(tuple) && index >= 0 &&
          index < tuple->operand_count() && tuple->operand(index)->shape() == shape) {
        return SetRoot(
            is_root, name_token,
            Bind(computation, name, tuple->operand(index), instruction->sharding(), name_token),
            root);
      }
    }
    ReserveName(name);
    Instruction* added = computation.AddInstruction(std::move(instruction));
    if (start != nullptr) {
      async_starts_[name] = added;
      generated_.insert(added);
      if (is_root)
        return reader_.ErrorAt(name_token, fmt::format("ROOT %{} is an async start", name));
      return absl::OkStatus();
    }
    names_[name] = added;
    layouts_[name] = std::move(layout);
    return SetRoot(is_root, name_token, added, root);
  }

  // rng draws from a constant state (ir/rng_expansion.h), so in a loop it would repeat its
  // values every iteration where XLA draws new ones: a while whose condition or body draws with
  // rng is refused; any other caller of such a computation draws with rng itself.
  absl::Status CheckRandomCallees(Computation& computation, const Instruction& instruction,
                                  const Token& at) {
    for (const Computation* callee : instruction.attributes().CalledComputations()) {
      if (!rng_computations_.contains(callee)) continue;
      if (instruction.opcode() == Opcode::kWhile) {
        return reader_.ErrorAt(
            at, fmt::format("while %{}: %{} draws with rng, which would repeat its values in "
                            "every iteration here; draw with rng-bit-generator and carry its "
                            "state in the loop",
                            instruction.name(), callee->name()));
      }
      rng_computations_.insert(&computation);
    }
    return absl::OkStatus();
  }

  absl::Status SetRoot(bool is_root, const Token& name_token, Instruction* value,
                       Instruction*& root) {
    if (!is_root) return absl::OkStatus();
    if (root != nullptr) return reader_.ErrorAt(name_token, "second ROOT instruction");
    root = value;
    return absl::OkStatus();
  }

  // A text name now taken: a generated instruction that has it is renamed.
  void ReserveName(const std::string& name) {
    auto found = generated_names_.find(name);
    if (found == generated_names_.end()) return;
    Instruction* generated = found->second;
    generated_names_.erase(found);
    generated->set_name(UniqueName(name, /*taken=*/name));
    generated_names_[generated->name()] = generated;
  }

  // `base`, or `base.N` when that is taken (by a name so far, or by `taken`).
  std::string UniqueName(const std::string& base, std::string_view taken = {}) {
    std::string name = base;
    for (int64_t suffix = 1; name == taken || names_.contains(name) ||
                             async_starts_.contains(name) || generated_names_.contains(name);
         ++suffix) {
      name = fmt::format("{}.{}", base, suffix);
    }
    return name;
  }

  // Adds an instruction a rewrite created, named uniquely.
  Instruction* AddGenerated(Computation& computation, std::unique_ptr<Instruction> instruction,
                            const Token& at) {
    instruction->set_name(UniqueName(instruction->name()));
    if (!instruction->location().known()) instruction->set_location({at.line, at.column});
    Instruction* added = computation.AddInstruction(std::move(instruction));
    generated_names_[added->name()] = added;
    generated_.insert(added);
    return added;
  }

  // Makes `name` refer to `value`. A sharding the op carried goes onto `value` when a rewrite
  // created it, else onto a copy, so the operand's own sharding is left alone.
  Instruction* Bind(Computation& computation, const std::string& name, Instruction* value,
                    const std::optional<Sharding>& sharding, const Token& at) {
    if (sharding.has_value() && value->sharding() != sharding) {
      if (generated_.contains(value)) {
        value->set_sharding(sharding);
      } else {
        auto copy = std::make_unique<Instruction>(Opcode::kCopy, value->shape(),
                                                  std::vector<Instruction*>{value});
        copy->set_name(name);
        copy->set_sharding(sharding);
        value = AddGenerated(computation, std::move(copy), at);
      }
    }
    names_[name] = value;
    return value;
  }

  // `base`, or `base.N`, naming no computation so far.
  std::string UniqueComputationName(const std::string& base) const {
    std::string name = base;
    for (int64_t suffix = 1; FindComputation(name) != nullptr; ++suffix) {
      name = fmt::format("{}.{}", base, suffix);
    }
    return name;
  }

  // XLA's top-k of `operand` as a sort and slices (ir/top_k.h), sorting by `to_apply` (a
  // custom-call TopK's comparator) or, without one, by the comparator `largest` implies; a
  // comparator made here joins the module before the computation being read.
  absl::StatusOr<Instruction*> TopK(Instruction* operand, int64_t k, bool largest,
                                    Computation* to_apply, const AddInstructionFn& add) {
    VKSPMD_RETURN_IF_ERROR(CheckTopKOperand(operand->shape(), k));
    const DType type = operand->shape().dtype();
    Computation* comparator = to_apply;
    std::unique_ptr<Computation> made;
    if (to_apply == nullptr) {
      made = TopKComparator(
          UniqueComputationName(largest ? "compare-greater-than" : "compare-less-than"), type,
          largest);
    } else {
      VKSPMD_ASSIGN_OR_RETURN(
          made, TopKSortComparator(UniqueComputationName(to_apply->name() + ".indexed"), *to_apply,
                                   type));
    }
    if (made != nullptr) {
      comparator = made.get();
      generated_computations_.insert(comparator);
      computations_.push_back(std::move(made));
    }
    return TopKAsSort(operand, k, comparator, add);
  }

  // A collective over several operands (XLA's combiners) as one per operand and a tuple
  // (ir/tuple_collectives.h); an async start's -done then reads that tuple.
  absl::Status SplitCollective(Computation& computation, const Instruction& collective,
                               const Token& at, bool async_start, bool is_root, ParsedLayout layout,
                               Instruction*& root) {
    rewritten_ = true;
    const AddInstructionFn add = [&](std::unique_ptr<Instruction> instruction) {
      return AddGenerated(computation, std::move(instruction), at);
    };
    // Without an "HloModule" line there is one replica and one partition, as Module's defaults.
    const int64_t replicas = module_ != nullptr ? module_->replica_count() : 1;
    const int64_t partitions = module_ != nullptr ? module_->partition_count() : 1;
    absl::StatusOr<Instruction*> tuple =
        CollectivePerOperand(collective, replicas, partitions, add);
    if (!tuple.ok()) return reader_.ErrorAt(at, std::string(tuple.status().message()));
    if (async_start) {
      async_starts_[collective.name()] = *tuple;
      if (is_root) {
        return reader_.ErrorAt(at, fmt::format("ROOT %{} is an async start", collective.name()));
      }
      return absl::OkStatus();
    }
    names_[collective.name()] = *tuple;
    layouts_[collective.name()] = std::move(layout);
    return SetRoot(is_root, at, *tuple, root);
  }

  // custom-call(x), custom_call_target="TopK", as XLA printed top-k before its topk op: the k
  // greatest of each row (k read from the result's values), or in its to_apply's order.
  absl::StatusOr<Instruction*> CustomCallTopK(Computation& computation, const Instruction& call,
                                              const Token& at) {
    const Shape& shape = call.shape();
    if (call.operand_count() != 1 || !shape.IsTuple() || shape.tuple_elements().size() != 2 ||
        !shape.tuple_elements()[0].IsArray() || shape.tuple_elements()[0].rank() == 0) {
      return reader_.ErrorAt(at, fmt::format("custom-call %{} \"TopK\" takes one operand and "
                                             "returns (values, indices), not {}",
                                             call.name(), shape.ToString()));
    }
    const AddInstructionFn add = [&](std::unique_ptr<Instruction> instruction) {
      return AddGenerated(computation, std::move(instruction), at);
    };
    const Shape& values = shape.tuple_elements()[0];
    absl::StatusOr<Instruction*> top = TopK(call.operand(0), values.dimension(values.rank() - 1),
                                            /*largest=*/true, call.attributes().to_apply, add);
    if (!top.ok()) {
      return reader_.ErrorAt(
          at, fmt::format("custom-call %{} \"TopK\": {}", call.name(), top.status().message()));
    }
    if ((*top)->shape() != shape) {
      return reader_.ErrorAt(
          at, fmt::format("custom-call %{} \"TopK\" is declared {} but computes {}", call.name(),
                          shape.ToString(), (*top)->shape().ToString()));
    }
    return *top;
  }

  absl::Status ParseFrontEndInstruction(FrontEndOp op, const Token& name_token,
                                        const std::string& name, const Shape& shape,
                                        const ParsedLayout& layout, const Token& opcode_token,
                                        Computation& computation, Instruction*& result);
  absl::Status ParseFrontEndAttribute(FrontEndOp op, std::string_view op_name,
                                      FrontEndAttributes& attributes);

  Computation* FindComputation(std::string_view name) const {
    for (const auto& computation : computations_) {
      if (computation->name() == name) return computation.get();
    }
    return nullptr;
  }

  // %name of a computation defined earlier in the text.
  absl::StatusOr<Computation*> ReadCallee() {
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string callee, reader_.ReadName());
    Computation* computation = FindComputation(callee);
    if (computation == nullptr) {
      return reader_.ErrorAt(token, fmt::format("unknown computation %{}", callee));
    }
    return computation;
  }

  // while's condition=/body= and conditional's true_computation=/false_computation=/
  // branch_computations={...} into attributes.called.
  absl::Status ParseControlFlowAttribute(std::string_view name, const Token& name_token,
                                         InstructionAttributes& attributes);

  absl::Status ParseParameterNumber(InstructionAttributes& attributes) {
    const Token number_token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(int64_t number, reader_.ReadInteger());
    if (number < 0 || number >= kMaxParameterNumber) {
      return reader_.ErrorAt(number_token, "parameter number must be in 0..65535");
    }
    if (!parameter_numbers_.insert(number).second) {
      return reader_.ErrorAt(number_token, fmt::format("duplicate parameter({})", number));
    }
    attributes.parameter_number = number;
    return reader_.ExpectPunct(")");
  }

  // With `async_start`, operands name async starts (the operand of a -done); `names` receives
  // the operands' names.
  absl::StatusOr<std::vector<Instruction*>> ParseOperands(
      bool async_start = false, std::vector<std::string>* names = nullptr) {
    std::vector<Instruction*> operands;
    if (reader_.TryConsume(")")) return operands;
    do {
      // XLA prints "f32[8]{0} %x"; newer XLA prints just "x". The annotation must be right.
      const Token shape_token = reader_.current();
      std::optional<Shape> annotated;
      if (reader_.IsPunct("(") || (reader_.current().kind == TokenKind::kWord &&
                                   DTypeFromName(reader_.current().text).has_value())) {
        VKSPMD_ASSIGN_OR_RETURN(annotated, reader_.ReadShape());
      }
      const Token operand_token = reader_.current();
      VKSPMD_ASSIGN_OR_RETURN(std::string operand_name, reader_.ReadName());
      const auto& table = async_start ? async_starts_ : names_;
      auto found = table.find(operand_name);
      if (found == table.end()) {
        if (async_start && names_.contains(operand_name)) {
          return reader_.ErrorAt(operand_token,
                                 fmt::format("%{} is not an async start", operand_name));
        }
        if (!async_start && async_starts_.contains(operand_name)) {
          return reader_.ErrorAt(
              operand_token,
              fmt::format("%{} is an async start; only its -done may read it", operand_name));
        }
        return reader_.ErrorAt(operand_token, fmt::format("unknown operand %{}", operand_name));
      }
      if (names != nullptr) names->push_back(operand_name);
      if (!async_start && annotated.has_value() && *annotated != found->second->shape()) {
        return reader_.ErrorAt(
            shape_token, fmt::format("operand %{} is annotated {} but is {}", operand_name,
                                     annotated->ToString(), found->second->shape().ToString()));
      }
      operands.push_back(found->second);
    } while (reader_.TryConsume(","));
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct(")"));
    return operands;
  }

  absl::Status ParseAttribute(Instruction& instruction);

  TextReader reader_;
  std::unique_ptr<Module> module_;
  // Computations in text order, moved into the module at the end; the entry; those inlined.
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
  absl::flat_hash_set<const Computation*> inlined_;
  // Computations that draw with rng (directly or through what they inline or call).
  absl::flat_hash_set<const Computation*> rng_computations_;
  int64_t rng_count_ = 0;  // rng ops read so far: each gets its own seed.
  // Per computation: what each text name refers to, async starts (read only by their -done),
  // the instructions rewrites created and their names, each text name's layout, and whether any
  // rewrite happened.
  absl::flat_hash_map<std::string, Instruction*> names_;
  absl::flat_hash_set<int64_t> parameter_numbers_;
  absl::flat_hash_map<std::string, Instruction*> async_starts_;
  // Computations a rewrite made (top-k comparators): renamed if the text names one the same.
  absl::flat_hash_set<const Computation*> generated_computations_;
  absl::flat_hash_set<const Instruction*> generated_;
  absl::flat_hash_map<std::string, Instruction*> generated_names_;
  absl::flat_hash_map<std::string, ParsedLayout> layouts_;
  bool rewritten_ = false;
};

absl::StatusOr<RngAlgorithm> ParseRngAlgorithm(TextReader& reader) {
  VKSPMD_ASSIGN_OR_RETURN(std::string name, reader.ReadWord("an rng algorithm"));
  if (name == "rng_default") return RngAlgorithm::kDefault;
  if (name == "rng_three_fry") return RngAlgorithm::kThreeFry;
  if (name == "rng_philox") return RngAlgorithm::kPhilox;
  return reader.Error(fmt::format("unknown rng algorithm '{}'", name));
}

absl::Status ModuleParser::ParseAttribute(Instruction& instruction) {
  const Token name_token = reader_.current();
  VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadWord("an attribute name"));
  if (!AttributeAppliesTo(name, instruction.opcode())) {
    return reader_.ErrorAt(name_token, fmt::format("attribute {} does not apply to {}", name,
                                                   OpcodeName(instruction.opcode())));
  }
  VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
  InstructionAttributes& attributes = instruction.attributes();
  if (name == "dimensions") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dimensions, reader_.ReadIntegerList());
  } else if (name == "iota_dimension") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.iota_dimension, reader_.ReadInteger());
  } else if (name == "index") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.tuple_index, reader_.ReadInteger());
  } else if (name == "slice") {
    return ParseSlice(reader_, attributes.slice);
  } else if (name == "dynamic_slice_sizes") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dynamic_slice_sizes, reader_.ReadIntegerList());
  } else if (name == "padding") {
    return ParsePadding(reader_, attributes.padding);
  } else if (name == "lhs_batch_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.lhs_batch, reader_.ReadIntegerList());
  } else if (name == "rhs_batch_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.rhs_batch, reader_.ReadIntegerList());
  } else if (name == "lhs_contracting_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.lhs_contracting, reader_.ReadIntegerList());
  } else if (name == "rhs_contracting_dims") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.dot.rhs_contracting, reader_.ReadIntegerList());
  } else if (name == "direction") {
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string direction, reader_.ReadWord("a comparison direction"));
    const std::optional<ComparisonDirection> parsed = ComparisonDirectionFromName(direction);
    if (!parsed.has_value()) {
      return reader_.ErrorAt(token, fmt::format("unknown comparison direction '{}'", direction));
    }
    attributes.direction = *parsed;
  } else if (name == "type") {
    // FLOAT/SIGNED/UNSIGNED repeat what the operand type says; TOTALORDER orders floats by bits.
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string type, reader_.ReadWord("a comparison type"));
    if (type != "FLOAT" && type != "SIGNED" && type != "UNSIGNED" && type != "TOTALORDER") {
      return reader_.ErrorAt(token, fmt::format("unsupported comparison type {}", type));
    }
    attributes.total_order = type == "TOTALORDER";
  } else if (name == "is_stable") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.is_stable, reader_.ReadBool());
  } else if (name == "to_apply") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.to_apply, ReadCallee());
  } else if (name == "condition" || name == "body" || name == "true_computation" ||
             name == "false_computation" || name == "branch_computations") {
    return ParseControlFlowAttribute(name, name_token, attributes);
  } else if (name == "replica_groups") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.replica_groups, reader_.ReadReplicaGroups());
  } else if (name == "channel_id") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.channel_id, reader_.ReadInteger());
  } else if (name == "use_global_device_ids") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.use_global_device_ids, reader_.ReadBool());
  } else if (name == "source_target_pairs") {
    return ParseSourceTargetPairs(reader_, attributes.source_target_pairs);
  } else if (name == "custom_call_target") {
    if (reader_.current().kind != TokenKind::kString) return reader_.Expected("a quoted target");
    attributes.custom_call_target = reader_.current().text;
    reader_.Advance();
  } else if (name == "exponent_bits" || name == "mantissa_bits") {
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(int64_t bits, reader_.ReadInteger());
    const bool exponent = name == "exponent_bits";
    if (bits < (exponent ? 1 : 0) || bits > 64) {
      return reader_.ErrorAt(token, fmt::format("{} must be in {}..64", name, exponent ? 1 : 0));
    }
    (exponent ? attributes.exponent_bits : attributes.mantissa_bits) = bits;
  } else if (name == "algorithm" && instruction.opcode() == Opcode::kRngBitGenerator) {
    VKSPMD_ASSIGN_OR_RETURN(attributes.rng_algorithm, ParseRngAlgorithm(reader_));
  } else if (IsGatherScatterAttribute(name)) {
    return ParseGatherScatterAttribute(reader_, name, attributes.gather);
  } else if (name == "sharding") {
    VKSPMD_ASSIGN_OR_RETURN(Sharding sharding, reader_.ReadSharding());
    instruction.set_sharding(std::move(sharding));
  } else if (name == "backend_config" && instruction.opcode() == Opcode::kWhile) {
    VKSPMD_ASSIGN_OR_RETURN(attributes.known_trip_count, ReadKnownTripCount(reader_));
  } else if (name == "backend_config" && instruction.opcode() == Opcode::kCustomCall &&
             !instruction.shape().IsTuple()) {
    VKSPMD_ASSIGN_OR_RETURN(attributes.unspecified_dims,
                            ReadUnspecifiedDims(reader_, instruction.shape().rank()));
  } else if (IsIgnoredAttribute(name) ||
             (name == "algorithm" && instruction.opcode() == Opcode::kDot)) {
    return reader_.SkipValue();
  } else {
    return reader_.ErrorAt(name_token, fmt::format("unsupported attribute {}", name));
  }
  return absl::OkStatus();
}

absl::Status ModuleParser::ParseControlFlowAttribute(std::string_view name, const Token& name_token,
                                                     InstructionAttributes& attributes) {
  std::vector<Computation*>& called = attributes.called;
  if (name == "branch_computations") {
    if (!called.empty()) {
      return reader_.ErrorAt(name_token,
                             "branch_computations= given twice or with "
                             "true_computation=/false_computation=");
    }
    VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("{"));
    do {
      VKSPMD_ASSIGN_OR_RETURN(Computation * branch, ReadCallee());
      called.push_back(branch);
    } while (reader_.TryConsume(","));
    return reader_.ExpectPunct("}");
  }
  // condition and true_computation fill slot 0, body and false_computation slot 1.
  const size_t slot = name == "condition" || name == "true_computation" ? 0 : 1;
  if (called.empty()) called.resize(2, nullptr);
  if (called.size() != 2 || called[slot] != nullptr) {
    return reader_.ErrorAt(name_token, fmt::format("{}= given twice or with "
                                                   "branch_computations=",
                                                   name));
  }
  VKSPMD_ASSIGN_OR_RETURN(called[slot], ReadCallee());
  return absl::OkStatus();
}

absl::Status ModuleParser::ParseFrontEndAttribute(FrontEndOp op, std::string_view op_name,
                                                  FrontEndAttributes& attributes) {
  const Token name_token = reader_.current();
  VKSPMD_ASSIGN_OR_RETURN(std::string name, reader_.ReadWord("an attribute name"));
  const bool calls = op == FrontEndOp::kFusion || op == FrontEndOp::kAsyncStart;
  const bool to_apply = op == FrontEndOp::kCall || op == FrontEndOp::kMap;
  const bool known = (name == "calls" && calls) || (name == "to_apply" && to_apply) ||
                     (name == "distribution" && op == FrontEndOp::kRng) ||
                     (name == "kind" && op == FrontEndOp::kFusion) ||
                     (name == "dimensions" && op == FrontEndOp::kMap) ||
                     ((name == "k" || name == "largest") && op == FrontEndOp::kTopK) ||
                     name == "sharding" || IsIgnoredAttribute(name);
  if (!known) {
    return reader_.ErrorAt(name_token,
                           fmt::format("attribute {} does not apply to {}", name, op_name));
  }
  VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("="));
  if (name == "calls" || name == "to_apply") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.callee, ReadCallee());
    return absl::OkStatus();
  }
  if (name == "distribution") {
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string distribution, reader_.ReadWord("a distribution"));
    if (distribution == "rng_uniform") {
      attributes.distribution = RngDistribution::kUniform;
    } else if (distribution == "rng_normal") {
      attributes.distribution = RngDistribution::kNormal;
    } else {
      return reader_.ErrorAt(token, fmt::format("unknown rng distribution {}", distribution));
    }
    return absl::OkStatus();
  }
  if (name == "kind") {
    // Fusion kinds say how XLA would emit the kernel, not what it computes.
    const Token token = reader_.current();
    VKSPMD_ASSIGN_OR_RETURN(std::string kind, reader_.ReadWord("a fusion kind"));
    if (kind != "kLoop" && kind != "kInput" && kind != "kOutput" && kind != "kCustom") {
      return reader_.ErrorAt(token, fmt::format("unknown fusion kind {}", kind));
    }
    return absl::OkStatus();
  }
  if (name == "k") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.k, reader_.ReadInteger());
    return absl::OkStatus();
  }
  if (name == "largest") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.largest, reader_.ReadBool());
    return absl::OkStatus();
  }
  if (name == "dimensions") {
    attributes.has_dimensions = true;
    VKSPMD_ASSIGN_OR_RETURN(attributes.dimensions, reader_.ReadIntegerList());
    return absl::OkStatus();
  }
  if (name == "sharding") {
    VKSPMD_ASSIGN_OR_RETURN(attributes.sharding, reader_.ReadSharding());
    return absl::OkStatus();
  }
  return reader_.SkipValue();
}

absl::Status ModuleParser::ParseFrontEndInstruction(FrontEndOp op, const Token& name_token,
                                                    const std::string& name, const Shape& shape,
                                                    const ParsedLayout& layout,
                                                    const Token& opcode_token,
                                                    Computation& computation,
                                                    Instruction*& result) {
  const std::string op_name = opcode_token.text;
  VKSPMD_RETURN_IF_ERROR(reader_.ExpectPunct("("));
  std::vector<std::string> operand_names;
  VKSPMD_ASSIGN_OR_RETURN(std::vector<Instruction*> operands,
                          ParseOperands(op == FrontEndOp::kAsyncDone, &operand_names));
  FrontEndAttributes attributes;
  while (reader_.TryConsume(",")) {
    VKSPMD_RETURN_IF_ERROR(ParseFrontEndAttribute(op, op_name, attributes));
  }
  // Errors of the rewrite are reported at the op.
  auto at_op = [&](const absl::Status& status) {
    return reader_.ErrorAt(name_token, fmt::format("{} %{}: {}", op_name, name, status.message()));
  };
  auto expect_shape = [&](const Shape& actual) -> absl::Status {
    if (actual == shape) return absl::OkStatus();
    return reader_.ErrorAt(name_token, fmt::format("{} %{} is declared {} but computes {}", op_name,
                                                   name, shape.ToString(), actual.ToString()));
  };
  auto expect_operands = [&](size_t count) -> absl::Status {
    if (operands.size() == count) return absl::OkStatus();
    return reader_.ErrorAt(name_token, fmt::format("{} %{} takes {} operand(s), got {}", op_name,
                                                   name, count, operands.size()));
  };
  const bool needs_callee = op == FrontEndOp::kFusion || op == FrontEndOp::kCall ||
                            op == FrontEndOp::kAsyncStart || op == FrontEndOp::kMap;
  if (needs_callee && attributes.callee == nullptr) {
    return reader_.ErrorAt(
        name_token,
        fmt::format(
            "{} %{} needs {}=", op_name, name,
            op == FrontEndOp::kFusion || op == FrontEndOp::kAsyncStart ? "calls" : "to_apply"));
  }
  const AddInstructionFn add = [&](std::unique_ptr<Instruction> instruction) {
    return AddGenerated(computation, std::move(instruction), name_token);
  };
  Instruction* value = nullptr;
  switch (op) {
    case FrontEndOp::kFusion:
    case FrontEndOp::kCall:
    case FrontEndOp::kAsyncStart: {
      absl::StatusOr<Instruction*> inlined = InlineComputation(*attributes.callee, operands, add);
      if (!inlined.ok()) return at_op(inlined.status());
      value = *inlined;
      inlined_.insert(attributes.callee);
      if (rng_computations_.contains(attributes.callee)) rng_computations_.insert(&computation);
      if (op == FrontEndOp::kAsyncStart) {
        // ((operands...), result, contexts...): the result is element 1.
        if (!shape.IsTuple() || shape.tuple_elements().size() < 2) {
          return reader_.ErrorAt(name_token,
                                 fmt::format("async-start %{} must be a tuple ((operands), result, "
                                             "...), not {}",
                                             name, shape.ToString()));
        }
        if (value->shape() != shape.tuple_elements()[1]) {
          return expect_shape(value->shape());
        }
        async_starts_[name] = value;
        return absl::OkStatus();
      }
      VKSPMD_RETURN_IF_ERROR(expect_shape(value->shape()));
      break;
    }
    case FrontEndOp::kMap: {
      std::vector<int64_t> all(operands.empty() ? 0 : operands[0]->shape().rank());
      for (size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int64_t>(i);
      if (attributes.has_dimensions && attributes.dimensions != all) {
        return reader_.ErrorAt(
            name_token, fmt::format("map %{} must map every dimension (dimensions={{{}}})", name,
                                    absl::StrJoin(all, ",")));
      }
      absl::StatusOr<Instruction*> mapped = MapComputation(*attributes.callee, operands, add);
      if (!mapped.ok()) return at_op(mapped.status());
      value = *mapped;
      inlined_.insert(attributes.callee);
      if (rng_computations_.contains(attributes.callee)) rng_computations_.insert(&computation);
      VKSPMD_RETURN_IF_ERROR(expect_shape(value->shape()));
      break;
    }
    case FrontEndOp::kBitcast: {
      VKSPMD_RETURN_IF_ERROR(expect_operands(1));
      const ParsedLayout& operand_layout = layouts_[operand_names[0]];
      // Tiles reorder the bytes in ways a transpose cannot express; only an identity is safe.
      if ((operand_layout.tiled || layout.tiled) &&
          (operands[0]->shape() != shape ||
           operand_layout.minor_to_major != layout.minor_to_major)) {
        return reader_.ErrorAt(name_token,
                               fmt::format("bitcast %{} between tiled layouts changes meaning "
                                           "with the tiling; only an identity bitcast of a tiled "
                                           "array is supported",
                                           name));
      }
      if (operands[0]->shape().IsArray() && operand_layout.minor_to_major.empty() &&
          operands[0]->shape().rank() > 0) {
        return reader_.ErrorAt(name_token, fmt::format("bitcast %{}: the layout of %{} is unknown",
                                                       name, operand_names[0]));
      }
      absl::StatusOr<Instruction*> lowered = BitcastAsShapeOps(
          operands[0], operand_layout.minor_to_major, shape, layout.minor_to_major, add);
      if (!lowered.ok()) return at_op(lowered.status());
      value = *lowered;
      break;
    }
    case FrontEndOp::kRng: {
      VKSPMD_RETURN_IF_ERROR(expect_operands(2));
      if (!attributes.distribution.has_value()) {
        return reader_.ErrorAt(name_token, fmt::format("rng %{} needs distribution=", name));
      }
      // A seed per rng op: spread by the golden ratio so that neighbours' keys share no bits.
      const uint64_t seed = 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(++rng_count_);
      absl::StatusOr<Instruction*> drawn =
          RngFromBitGenerator(operands[0], operands[1], shape, *attributes.distribution, seed, add);
      if (!drawn.ok()) return at_op(drawn.status());
      value = *drawn;
      rng_computations_.insert(&computation);
      VKSPMD_RETURN_IF_ERROR(expect_shape(value->shape()));
      break;
    }
    case FrontEndOp::kTopK: {
      VKSPMD_RETURN_IF_ERROR(expect_operands(1));
      if (!attributes.k.has_value()) {
        return reader_.ErrorAt(name_token, fmt::format("topk %{} needs k=", name));
      }
      absl::StatusOr<Instruction*> top =
          TopK(operands[0], *attributes.k, attributes.largest, nullptr, add);
      if (!top.ok()) return at_op(top.status());
      value = *top;
      VKSPMD_RETURN_IF_ERROR(expect_shape(value->shape()));
      break;
    }
    case FrontEndOp::kOptimizationBarrier:
      VKSPMD_RETURN_IF_ERROR(expect_operands(1));
      value = operands[0];
      VKSPMD_RETURN_IF_ERROR(expect_shape(value->shape()));
      break;
    case FrontEndOp::kCopyStart: {
      // (destination, source, context): a copy, read by copy-done.
      VKSPMD_RETURN_IF_ERROR(expect_operands(1));
      if (!shape.IsTuple() || shape.tuple_elements().empty() ||
          shape.tuple_elements()[0] != operands[0]->shape()) {
        return reader_.ErrorAt(
            name_token, fmt::format("copy-start %{} must be a tuple ({}, {}, u32[]), not {}", name,
                                    operands[0]->shape().ToString(),
                                    operands[0]->shape().ToString(), shape.ToString()));
      }
      auto copy = std::make_unique<Instruction>(Opcode::kCopy, operands[0]->shape(),
                                                std::vector<Instruction*>{operands[0]});
      copy->set_name(name);
      copy->set_sharding(attributes.sharding);
      async_starts_[name] = add(std::move(copy));
      return absl::OkStatus();
    }
    case FrontEndOp::kAsyncDone:
      VKSPMD_RETURN_IF_ERROR(expect_operands(1));
      value = operands[0];
      if (op_name == "async-update") {
        async_starts_[name] = value;
        return absl::OkStatus();
      }
      VKSPMD_RETURN_IF_ERROR(expect_shape(value->shape()));
      break;
  }
  layouts_[name] = layout;
  result = Bind(computation, name, value, attributes.sharding, name_token);
  return absl::OkStatus();
}

// Every message of the public entry points may quote the input: escape what it quotes.
absl::Status Escaped(const absl::Status& status) {
  return absl::Status(status.code(), base::EscapeControlBytes(std::string(status.message())));
}

}  // namespace

absl::StatusOr<std::unique_ptr<Module>> ParseModule(std::string_view text) {
  absl::StatusOr<std::unique_ptr<Module>> module = ModuleParser(text).Parse();
  if (!module.ok()) return Escaped(module.status());
  return module;
}

absl::StatusOr<std::unique_ptr<Module>> ParseAndVerifyModule(std::string_view text) {
  VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<Module> module, ParseModule(text));
  absl::Status verified = VerifyModule(*module);
  if (!verified.ok()) return Escaped(verified);
  return module;
}

absl::StatusOr<Sharding> ParseSharding(std::string_view text) {
  TextReader reader(text);
  absl::StatusOr<Sharding> sharding = reader.ReadSharding();
  if (sharding.ok() && !reader.AtEnd()) sharding = reader.Expected("end of input");
  if (!sharding.ok()) return Escaped(sharding.status());
  return sharding;
}

}  // namespace vkspmd::ir
