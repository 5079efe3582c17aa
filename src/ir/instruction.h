// One IR instruction: opcode, result shape, operands, and the attributes XLA gives the op
// (dimensions=, slice=, replica_groups=, to_apply=, sharding=, ...).
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "src/ir/literal.h"
#include "src/ir/opcode.h"
#include "src/ir/shape.h"
#include "src/ir/sharding.h"

namespace vkspmd::ir {

class Computation;

// Where an instruction was written, when it came from text (line and column are 1-based).
struct SourceLocation {
  int line = 0;
  int column = 0;
  bool known() const { return line > 0; }
};

struct SliceDimension {
  int64_t start = 0;
  int64_t limit = 0;
  int64_t stride = 1;
  bool operator==(const SliceDimension&) const = default;
};

// padding=low_high or low_high_interior per dimension; low and high may be negative.
struct PaddingDimension {
  int64_t low = 0;
  int64_t high = 0;
  int64_t interior = 0;
  bool operator==(const PaddingDimension&) const = default;
};

struct DotDimensions {
  std::vector<int64_t> lhs_batch;
  std::vector<int64_t> rhs_batch;
  std::vector<int64_t> lhs_contracting;
  std::vector<int64_t> rhs_contracting;
  bool operator==(const DotDimensions&) const = default;
};

// replica_groups={{0,1},{2,3}} or the iota form [2,2]<=[4] (kept as parsed for printing).
struct ReplicaGroups {
  std::vector<std::vector<int64_t>> groups;
  std::optional<DeviceArray> iota;
  // The groups as lists, expanding the iota form: rows of the [groups, size] array.
  std::vector<std::vector<int64_t>> Expand() const;
  std::string ToString() const;
  bool operator==(const ReplicaGroups& other) const { return Expand() == other.Expand(); }
};

enum class RngAlgorithm { kDefault, kThreeFry, kPhilox };

// gather's and scatter's dimension numbers, under gather's names; scatter's are in brackets.
// index_vector_dim == the indices' rank means each index is a scalar (an implicit trailing 1).
struct GatherDimensions {
  std::vector<int64_t> offset_dims;                  // [update_window_dims]
  std::vector<int64_t> collapsed_slice_dims;         // [inserted_window_dims]
  std::vector<int64_t> start_index_map;              // [scatter_dims_to_operand_dims]
  std::vector<int64_t> operand_batching_dims;        // [input_batching_dims]
  std::vector<int64_t> start_indices_batching_dims;  // [scatter_indices_batching_dims]
  int64_t index_vector_dim = 0;
  std::vector<int64_t> slice_sizes;  // gather only
  bool indices_are_sorted = false;
  bool unique_indices = false;  // scatter only
  bool operator==(const GatherDimensions&) const = default;
};

// Every attribute any op may carry; each op reads only its own (see the printer for which).
struct InstructionAttributes {
  int64_t parameter_number = 0;
  std::optional<Literal> literal;  // constant
  std::vector<int64_t> dimensions;
  int64_t iota_dimension = 0;
  int64_t exponent_bits = 0;  // reduce-precision
  int64_t mantissa_bits = 0;  // reduce-precision
  int64_t tuple_index = 0;
  std::vector<SliceDimension> slice;
  std::vector<int64_t> dynamic_slice_sizes;
  std::vector<PaddingDimension> padding;
  DotDimensions dot;
  ComparisonDirection direction = ComparisonDirection::kEq;
  Computation* to_apply = nullptr;
  ReplicaGroups replica_groups;
  std::optional<int64_t> channel_id;
  bool use_global_device_ids = false;
  std::vector<std::pair<int64_t, int64_t>> source_target_pairs;
  std::string custom_call_target;
  RngAlgorithm rng_algorithm = RngAlgorithm::kDefault;
  GatherDimensions gather;   // gather, scatter
  bool is_stable = false;    // sort
  bool total_order = false;  // compare type=TOTALORDER
  // while: {condition, body}; conditional: its branches in index order (a pred selector's
  // true_computation is branch 0, false_computation branch 1, as in XLA).
  std::vector<Computation*> called;
  // while: backend_config={"known_trip_count":{"n":"K"}} as XLA writes it (the body runs K times).
  std::optional<int64_t> known_trip_count;
  // custom-call Sharding (and the manual-region boundaries JAX writes beside it):
  // backend_config="unspecified_dims=[0,1]", XLA's sharding_op_util attribute: dims whose
  // sharding propagation may still choose (ascending, within the result's rank).
  std::vector<int64_t> unspecified_dims;
  // to_apply and `called`: every computation the instruction calls.
  std::vector<Computation*> CalledComputations() const;
  // Every field as default-constructed (replica_groups compared as written, not expanded).
  bool IsDefault() const;
  bool operator==(const InstructionAttributes&) const = default;
};

class Instruction {
 public:
  Instruction(Opcode opcode, Shape shape, std::vector<Instruction*> operands)
      : opcode_(opcode), shape_(std::move(shape)), operands_(std::move(operands)) {}
  // Copies are deep: the copy owns its own attributes.
  Instruction(const Instruction& other);
  Instruction& operator=(const Instruction& other);
  Instruction(Instruction&&) = default;
  Instruction& operator=(Instruction&&) = default;

  Opcode opcode() const { return opcode_; }
  const std::string& name() const { return name_; }
  void set_name(std::string name) { name_ = std::move(name); }
  const Shape& shape() const { return shape_; }
  void set_shape(Shape shape) { shape_ = std::move(shape); }
  const std::vector<Instruction*>& operands() const { return operands_; }
  Instruction* operand(int64_t index) const { return operands_[index]; }
  int64_t operand_count() const { return static_cast<int64_t>(operands_.size()); }
  void ReplaceOperand(int64_t index, Instruction* operand) { operands_[index] = operand; }

  // The attributes live out of line and only once set (see the size note below): the const
  // accessor reads a shared default when there are none, the non-const one allocates them.
  const InstructionAttributes& attributes() const {
    return attributes_ != nullptr ? *attributes_ : DefaultAttributes();
  }
  InstructionAttributes& attributes() {
    if (attributes_ == nullptr) attributes_ = std::make_unique<InstructionAttributes>();
    return *attributes_;
  }
  // Replaces the attributes; default ones (most elementwise ops) are not allocated at all.
  void set_attributes(InstructionAttributes attributes);
  const std::optional<Sharding>& sharding() const { return sharding_; }
  void set_sharding(std::optional<Sharding> sharding) { sharding_ = std::move(sharding); }
  const SourceLocation& location() const { return location_; }
  void set_location(SourceLocation location) { location_ = location; }
  Computation* parent() const { return parent_; }
  void set_parent(Computation* parent) { parent_ = parent; }

  // "4:3: %add.3" (text position when parsed) or "%add.3": how errors name this instruction.
  std::string Describe() const;

 private:
  static const InstructionAttributes& DefaultAttributes() {
    static const InstructionAttributes kDefault;
    return kDefault;
  }

  Opcode opcode_;
  std::string name_;
  Shape shape_;
  std::vector<Instruction*> operands_;
  std::unique_ptr<InstructionAttributes> attributes_;  // null: all default
  std::optional<Sharding> sharding_;
  SourceLocation location_;
  Computation* parent_ = nullptr;
};

// The lazy tracer allocates one Instruction per traced op on its thread. glibc serves a request
// whose chunk is >= 1,024 bytes (a request > 1,000 bytes) from the large bins, and each such
// request first runs malloc_consolidate over every fast-bin chunk that the previous step's
// thousands of small frees left, which cost 13% of the main thread's samples when the
// attributes were inline (sizeof(Instruction) was 1,152). Keep it well below the threshold.
static_assert(sizeof(Instruction) < 1008, "ir::Instruction must stay a small-bin allocation");

}  // namespace vkspmd::ir
