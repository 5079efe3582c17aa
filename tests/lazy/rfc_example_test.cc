// The XLAShardedTensor RFC's example in C++: values, sharding_type, sharding_spec and every local
// shard's index ranges for specs (0, 1), (1, None), (None, None), (0, None) on meshes (2, 4) and
// (4, 2).
#include <gtest/gtest.h>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

struct Case {
  std::vector<int64_t> mesh_shape;
  PartitionSpec spec;
  ShardingType type;
  std::string sharding;
};

class RfcExampleTest : public ::testing::TestWithParam<int> {};

std::vector<Case> Cases() {
  return {
      {{2, 4}, {0, 1}, ShardingType::kTiled, "{devices=[2,4]<=[8]}"},
      {{2, 4},
       {1, None},
       ShardingType::kPartial,
       "{devices=[4,1,2]<=[2,4]T(1,0) last_tile_dim_replicate}"},
      {{2, 4}, {None, None}, ShardingType::kReplicated, "{replicated}"},
      {{2, 4}, {0, None}, ShardingType::kPartial, "{devices=[2,1,4]<=[8] last_tile_dim_replicate}"},
      {{4, 2}, {0, 1}, ShardingType::kTiled, "{devices=[4,2]<=[8]}"},
      {{4, 2},
       {1, None},
       ShardingType::kPartial,
       "{devices=[2,1,4]<=[4,2]T(1,0) last_tile_dim_replicate}"},
      {{4, 2}, {None, None}, ShardingType::kReplicated, "{replicated}"},
      {{4, 2}, {0, None}, ShardingType::kPartial, "{devices=[4,1,2]<=[8] last_tile_dim_replicate}"},
  };
}

TEST(RfcExampleTest, ShardsOfAnEightByFourTensor) {
  for (const Case& c : Cases()) {
    SCOPED_TRACE(::testing::Message() << "mesh " << c.mesh_shape[0] << "x" << c.mesh_shape[1]
                                      << " expecting " << c.sharding);
    manual_seed(7);
    auto m1 = randn({8, 4});
    const std::vector<float> values = m1.to_vector<float>();
    Mesh mesh(c.mesh_shape);
    ShardedTensor sharded = mark_sharding(m1, mesh, c.spec);
    EXPECT_EQ(sharded.sharding_type(), c.type);
    EXPECT_EQ(sharded.sharding_spec(), c.sharding);
    EXPECT_EQ(sharded.global_tensor().to_vector<float>(), values);
    std::vector<LocalShard> shards = sharded.local_shards();
    ASSERT_EQ(shards.size(), 8u);
    for (const LocalShard& shard : shards) {
      ASSERT_EQ(shard.indices.size(), 2u);
      std::vector<float> expected;
      for (int64_t r = shard.indices[0].start; r < shard.indices[0].stop; ++r) {
        for (int64_t k = shard.indices[1].start; k < shard.indices[1].stop; ++k) {
          expected.push_back(values[r * 4 + k]);
        }
      }
      EXPECT_EQ(shard.unpadded_data.values<float>(), expected) << "device " << shard.device;
    }
  }
}

}  // namespace
}  // namespace vkspmd::testing
