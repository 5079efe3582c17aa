// Instruction's out-of-line attributes: absent ones read as the defaults, copies are deep, and
// set_attributes keeps default attributes unallocated. The size pin is the allocator's rule.
#include "src/ir/instruction.h"

#include <utility>

#include "gtest/gtest.h"

namespace vkspmd::ir {
namespace {

Instruction MakeAdd() { return Instruction(Opcode::kAdd, Shape(DType::kF32, {4}), {}); }

TEST(InstructionTest, AbsentAttributesReadAsTheDefaults) {
  const Instruction add = MakeAdd();
  EXPECT_TRUE(add.attributes().IsDefault());
  EXPECT_EQ(add.attributes().parameter_number, 0);
  EXPECT_TRUE(add.attributes().dimensions.empty());
  EXPECT_EQ(add.attributes().to_apply, nullptr);
  EXPECT_FALSE(add.attributes().literal.has_value());
}

TEST(InstructionTest, NonConstAccessWritesThisInstructionOnly) {
  Instruction a = MakeAdd();
  const Instruction b = MakeAdd();
  a.attributes().dimensions = {1, 0};
  EXPECT_EQ(a.attributes().dimensions, (std::vector<int64_t>{1, 0}));
  EXPECT_TRUE(b.attributes().dimensions.empty());  // the shared default is untouched
  EXPECT_TRUE(MakeAdd().attributes().IsDefault());
}

TEST(InstructionTest, CopiesAreDeep) {
  Instruction original = MakeAdd();
  original.attributes().dimensions = {2};
  original.attributes().custom_call_target = "Sharding";
  Instruction copy = original;
  copy.attributes().dimensions.push_back(3);
  EXPECT_EQ(original.attributes().dimensions, (std::vector<int64_t>{2}));
  EXPECT_EQ(copy.attributes().dimensions, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(copy.attributes().custom_call_target, "Sharding");

  Instruction assigned = MakeAdd();
  assigned = original;
  assigned.attributes().custom_call_target = "TopK";
  EXPECT_EQ(original.attributes().custom_call_target, "Sharding");

  // The passes' clone idiom: clone->attributes() = original.attributes().
  Instruction clone = MakeAdd();
  clone.attributes() = std::as_const(original).attributes();
  clone.attributes().dimensions[0] = 7;
  EXPECT_EQ(original.attributes().dimensions, (std::vector<int64_t>{2}));
  EXPECT_EQ(clone.attributes().dimensions, (std::vector<int64_t>{7}));
}

TEST(InstructionTest, SetAttributesReplacesAndResets) {
  Instruction add = MakeAdd();
  InstructionAttributes attributes;
  attributes.tuple_index = 3;
  add.set_attributes(attributes);
  EXPECT_EQ(std::as_const(add).attributes().tuple_index, 3);
  InstructionAttributes other;
  other.is_stable = true;
  add.set_attributes(other);
  EXPECT_EQ(std::as_const(add).attributes().tuple_index, 0);
  EXPECT_TRUE(std::as_const(add).attributes().is_stable);
  add.set_attributes({});
  EXPECT_TRUE(std::as_const(add).attributes().IsDefault());
}

TEST(InstructionTest, IsDefaultSeesEveryKindOfField) {
  EXPECT_TRUE(InstructionAttributes{}.IsDefault());
  InstructionAttributes literal;
  literal.literal = Literal(Shape::Scalar(DType::kF32));
  EXPECT_FALSE(literal.IsDefault());
  InstructionAttributes trip;
  trip.known_trip_count = 0;
  EXPECT_FALSE(trip.IsDefault());
  InstructionAttributes gather;
  gather.gather.index_vector_dim = 1;
  EXPECT_FALSE(gather.IsDefault());
  InstructionAttributes direction;
  direction.direction = ComparisonDirection::kLt;
  EXPECT_FALSE(direction.IsDefault());
  // An iota form whose expansion is empty still differs from no replica_groups= at all.
  InstructionAttributes iota;
  iota.replica_groups.iota = DeviceArray();
  ASSERT_TRUE(iota.replica_groups.Expand().empty());
  EXPECT_FALSE(iota.IsDefault());
}

// glibc rounds a request of n bytes to a chunk of (n + 8 + 15) & ~15 bytes and serves chunks of
// 1,024 bytes or more from the large bins, after consolidating the fast bins.
TEST(InstructionTest, StaysASmallBinAllocation) {
  const size_t chunk = (sizeof(Instruction) + 8 + 15) & ~size_t{15};
  EXPECT_LT(chunk, 1024u) << "sizeof(Instruction) = " << sizeof(Instruction);
}

}  // namespace
}  // namespace vkspmd::ir
