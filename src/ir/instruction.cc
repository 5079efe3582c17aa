// One IR instruction: naming in errors and replica-group expansion.
// Everything else is plain data read by the verifier, printer and evaluator.
#include "src/ir/instruction.h"

#include "absl/strings/str_join.h"
#include "fmt/format.h"

namespace vkspmd::ir {

std::vector<std::vector<int64_t>> ReplicaGroups::Expand() const {
  if (!iota.has_value()) return groups;
  const std::vector<int64_t> ids = iota->Flatten();
  std::vector<std::vector<int64_t>> expanded;
  if (iota->dimensions.size() != 2 || iota->dimensions[1] <= 0) return expanded;
  const int64_t group_size = iota->dimensions[1];
  for (size_t start = 0; start + group_size <= ids.size(); start += group_size) {
    expanded.emplace_back(ids.begin() + start, ids.begin() + start + group_size);
  }
  return expanded;
}

std::string ReplicaGroups::ToString() const {
  if (iota.has_value()) return iota->ToString();
  std::vector<std::string> parts;
  for (const std::vector<int64_t>& group : groups) {
    parts.push_back(fmt::format("{{{}}}", absl::StrJoin(group, ",")));
  }
  return fmt::format("{{{}}}", absl::StrJoin(parts, ","));
}

std::vector<Computation*> InstructionAttributes::CalledComputations() const {
  std::vector<Computation*> computations;
  if (to_apply != nullptr) computations.push_back(to_apply);
  computations.insert(computations.end(), called.begin(), called.end());
  return computations;
}

bool InstructionAttributes::IsDefault() const {
  // ReplicaGroups compares expanded groups, under which a malformed iota form equals none.
  if (!replica_groups.groups.empty() || replica_groups.iota.has_value()) return false;
  static const InstructionAttributes kDefault;
  return *this == kDefault;
}

Instruction::Instruction(const Instruction& other)
    : opcode_(other.opcode_),
      name_(other.name_),
      shape_(other.shape_),
      operands_(other.operands_),
      attributes_(other.attributes_ != nullptr
                      ? std::make_unique<InstructionAttributes>(*other.attributes_)
                      : nullptr),
      sharding_(other.sharding_),
      location_(other.location_),
      parent_(other.parent_) {}

Instruction& Instruction::operator=(const Instruction& other) {
  if (this != &other) *this = Instruction(other);
  return *this;
}

void Instruction::set_attributes(InstructionAttributes attributes) {
  if (attributes.IsDefault()) {
    attributes_.reset();
  } else if (attributes_ != nullptr) {
    *attributes_ = std::move(attributes);
  } else {
    attributes_ = std::make_unique<InstructionAttributes>(std::move(attributes));
  }
}

std::string Instruction::Describe() const {
  if (!location_.known()) return "%" + name_;
  return fmt::format("{}:{}: %{}", location_.line, location_.column, name_);
}

}  // namespace vkspmd::ir
