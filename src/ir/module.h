// Computation (a list of instructions with parameters and a root) and Module (computations, the
// entry, input/output aliasing and the replica/partition counts).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "src/ir/instruction.h"

namespace vkspmd::ir {

class Computation {
 public:
  explicit Computation(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }

  // Takes ownership; instructions are kept in the order added, which must be a topological
  // order (operands first). A parameter instruction is also recorded by its number.
  Instruction* AddInstruction(std::unique_ptr<Instruction> instruction);
  const std::vector<std::unique_ptr<Instruction>>& instructions() const { return instructions_; }

  // Parameters indexed by parameter number (nullptr for a missing number).
  const std::vector<Instruction*>& parameters() const { return parameters_; }
  Instruction* parameter(int64_t number) const { return parameters_[number]; }
  int64_t parameter_count() const { return static_cast<int64_t>(parameters_.size()); }

  // The root; the last instruction when none was set.
  Instruction* root() const;
  void set_root(Instruction* root) { root_ = root; }

  // Deletes the instructions the root does not depend on (parameters stay, since they define the
  // signature); returns how many. Pointers to deleted instructions dangle afterwards.
  int64_t RemoveUnreachable();

 private:
  std::string name_;
  std::vector<std::unique_ptr<Instruction>> instructions_;
  std::vector<Instruction*> parameters_;
  Instruction* root_ = nullptr;
};

// input_output_alias={ {0}: (1, {}, may-alias) }: output tuple index aliases a parameter.
struct InputOutputAlias {
  std::vector<int64_t> output_index;
  int64_t parameter_number = 0;
  std::vector<int64_t> parameter_index;
  bool must_alias = false;
  bool operator==(const InputOutputAlias&) const = default;
};

class Module {
 public:
  explicit Module(std::string name) : name_(std::move(name)) {}

  const std::string& name() const { return name_; }
  // Takes ownership; callees must be added before their callers.
  Computation* AddComputation(std::unique_ptr<Computation> computation);
  const std::vector<std::unique_ptr<Computation>>& computations() const { return computations_; }
  Computation* entry() const { return entry_; }
  void set_entry(Computation* entry) { entry_ = entry; }
  Computation* FindComputation(std::string_view name) const;

  const std::vector<InputOutputAlias>& input_output_aliases() const { return aliases_; }
  std::vector<InputOutputAlias>& input_output_aliases() { return aliases_; }
  int64_t replica_count() const { return replica_count_; }
  void set_replica_count(int64_t count) { replica_count_ = count; }
  int64_t partition_count() const { return partition_count_; }
  void set_partition_count(int64_t count) { partition_count_ = count; }

 private:
  std::string name_;
  std::vector<std::unique_ptr<Computation>> computations_;
  Computation* entry_ = nullptr;
  std::vector<InputOutputAlias> aliases_;
  int64_t replica_count_ = 1;
  int64_t partition_count_ = 1;
};

}  // namespace vkspmd::ir
