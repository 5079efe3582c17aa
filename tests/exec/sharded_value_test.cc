// Splitting host values into shards and assembling them back: uneven dims (padding at the end,
// zero-filled), replication over an unused mesh axis, maximal shardings, and the errors.
#include "src/exec/sharded_value.h"

#include <gtest/gtest.h>

#include "src/spmd/partition_spec.h"

namespace vkspmd::exec {
namespace {

spmd::AxisSharding Sharding(const std::string& spec, const spmd::Mesh& mesh, int64_t rank) {
  absl::StatusOr<spmd::PartitionSpec> parsed = spmd::PartitionSpec::Parse(spec);
  EXPECT_TRUE(parsed.ok()) << parsed.status();
  absl::StatusOr<ir::Sharding> sharding = spmd::PartitionSpecToSharding(*parsed, mesh, rank);
  EXPECT_TRUE(sharding.ok()) << sharding.status();
  absl::StatusOr<spmd::AxisSharding> axes = spmd::FromHloSharding(*sharding, mesh, rank);
  EXPECT_TRUE(axes.ok()) << axes.status();
  return *axes;
}

ir::Literal Iota(const ir::Shape& shape) {
  ir::Literal literal(shape);
  for (int64_t i = 0; i < literal.ElementCount(); ++i) literal.SetFromInt64(i, i + 1);
  return literal;
}

TEST(ShardedValueTest, ShardsAssembleBackToTheOriginalForUnevenAndReplicatedSplits) {
  const spmd::Mesh mesh = *spmd::Mesh::Create({2, 3});
  const ir::Shape shape(ir::DType::kS32, {5, 7});
  const ir::Literal full = Iota(shape);
  for (const char* spec :
       {"(0, 1)", "(1, 0)", "(None, 1)", "(0, None)", "((0, 1), None)", "(None, None)"}) {
    SCOPED_TRACE(spec);
    const spmd::AxisSharding sharding = Sharding(spec, mesh, 2);
    std::vector<ir::Literal> shards;
    for (int64_t device = 0; device < mesh.device_count(); ++device) {
      absl::StatusOr<ir::Literal> shard = ShardLiteral(full, sharding, mesh, device);
      ASSERT_TRUE(shard.ok()) << shard.status();
      shards.push_back(std::move(*shard));
    }
    absl::StatusOr<ir::Literal> assembled = AssembleLiteral(shards, shape, sharding, mesh);
    ASSERT_TRUE(assembled.ok()) << assembled.status();
    EXPECT_EQ(assembled->bytes(), full.bytes());
  }
  // (0, 1): dim 0 split in 2 (3 + 2 rows), dim 1 in 3 (3 + 3 + 1 columns); device 5 holds rows
  // 3..4 and column 6, padded to [3, 3] with zeros.
  absl::StatusOr<ir::Literal> last = ShardLiteral(full, Sharding("(0, 1)", mesh, 2), mesh, 5);
  ASSERT_TRUE(last.ok()) << last.status();
  EXPECT_EQ(last->shape(), ir::Shape(ir::DType::kS32, {3, 3}));
  EXPECT_EQ(last->GetAsInt64(0), 3 * 7 + 6 + 1);
  EXPECT_EQ(last->GetAsInt64(1), 0);
  EXPECT_EQ(last->GetAsInt64(3), 4 * 7 + 6 + 1);
  EXPECT_EQ(last->GetAsInt64(6), 0);
}

TEST(ShardedValueTest, BadShardingsAndShardsAreErrors) {
  const spmd::Mesh mesh = *spmd::Mesh::Create({2});
  const ir::Literal full = Iota(ir::Shape(ir::DType::kF32, {4}));
  const spmd::AxisSharding split = Sharding("(0,)", mesh, 1);
  EXPECT_FALSE(ShardLiteral(full, split, mesh, 2).ok());
  EXPECT_FALSE(ShardLiteral(full, spmd::AxisSharding::Replicated(2), mesh, 0).ok());
  EXPECT_FALSE(ShardLiteral(full, spmd::AxisSharding::Manual(1), mesh, 0).ok());
  std::vector<ir::Literal> wrong = {Iota(ir::Shape(ir::DType::kF32, {3})),
                                    Iota(ir::Shape(ir::DType::kF32, {3}))};
  absl::Status status = AssembleLiteral(wrong, full.shape(), split, mesh).status();
  EXPECT_NE(status.message().find("device 1's shard is f32[3]"), absl::string_view::npos) << status;
  const spmd::Mesh subset = *spmd::Mesh::Create({2}, {4, 5});
  EXPECT_EQ(ShardLiteral(full, split, subset, 0).status().code(), absl::StatusCode::kUnimplemented);
}

}  // namespace
}  // namespace vkspmd::exec
