// DTensor on lavapipe devices with validation: every placement on 1-D and 2-D meshes over
// permuted devices with uneven dims, redistribute between placements, the collectives
// redistribute emits, Partial semantics against hand values, ops, and misuse errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>

#include "tests/dtensor/dtensor_test_util.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::IsEmpty;

// Every placement a mesh axis can take for a tensor of rank 2 (the Partial ones as distributed).
std::vector<Placement> AxisChoices() {
  return {Shard{0}, Shard{1}, Replicate{}, Partial{ReduceOp::kSum}, Partial{ReduceOp::kMax}};
}

// Every list of one choice per axis of a mesh of `rank` axes.
std::vector<Placements> AllPlacements(int64_t rank, const std::vector<Placement>& choices) {
  std::vector<Placements> lists = {{}};
  for (int64_t axis = 0; axis < rank; ++axis) {
    std::vector<Placements> longer;
    for (const Placements& list : lists) {
      for (const Placement& choice : choices) {
        longer.push_back(list);
        longer.back().push_back(choice);
      }
    }
    lists = std::move(longer);
  }
  return lists;
}

// Each device's local tensor and the full value of `tensor` against the oracle.
void ExpectLayout(const DTensor& tensor, const HostValues& global, const Placements& placements) {
  SCOPED_TRACE(absl::StrCat(tensor.device_mesh().to_string(), " ", Describe(placements)));
  EXPECT_EQ(tensor.placements(), placements);
  EXPECT_EQ(tensor.shape(), global.shape);
  const std::vector<Tensor> locals = tensor.to_local();
  ASSERT_EQ(static_cast<int64_t>(locals.size()), tensor.device_mesh().size());
  for (size_t i = 0; i < locals.size(); ++i) {
    EXPECT_EQ(Compare(locals[i], ExpectedLocal(global, tensor.device_mesh().shape(), placements,
                                               static_cast<int64_t>(i))),
              "")
        << "device position " << i;
  }
  EXPECT_EQ(Compare(tensor.full_tensor(), global), "");
}

void DistributeEveryPlacement(const DeviceMesh& mesh, const std::vector<int64_t>& shape) {
  const HostValues global = Iota(shape);
  for (const Placements& placements : AllPlacements(mesh.ndim(), AxisChoices())) {
    ExpectLayout(distribute_tensor(ToTensor(global), mesh, placements), global, placements);
  }
}

TEST(DTensorTest, DistributeEveryPlacementOn1DMeshes) {
  // 5 and 7 are uneven over 2 and 4 devices (7 over 4: chunks 2, 2, 2, 1).
  DistributeEveryPlacement(DeviceMesh({1, 0}, {2}), {5, 3});
  DistributeEveryPlacement(DeviceMesh({2, 0, 3, 1}, {4}, {"x"}), {7, 5});
}

TEST(DTensorTest, DistributeEveryPlacementOn2x2Mesh) {
  DistributeEveryPlacement(DeviceMesh({3, 1, 0, 2}, {2, 2}, {"x", "y"}), {5, 6});
}

// The full matrices run under the `slow` label (VKSPMD_FULL_DTENSOR=1, see CMakeLists.txt).
bool FullMatrix() { return std::getenv("VKSPMD_FULL_DTENSOR") != nullptr; }

TEST(DTensorTest, FullDistributeEveryPlacementOn2x4Mesh) {
  if (!FullMatrix()) GTEST_SKIP() << "set VKSPMD_FULL_DTENSOR=1 (ctest -L slow)";
  DistributeEveryPlacement(DeviceMesh({7, 5, 3, 1, 6, 4, 2, 0}, {2, 4}, {"dp", "tp"}), {9, 6});
  DistributeEveryPlacement(DeviceMesh({0, 1, 2, 3, 4, 5, 6, 7}, {2, 4}), {8, 12});
}

void RedistributeEveryPair(const DeviceMesh& mesh, const std::vector<int64_t>& shape,
                           const std::vector<Placement>& choices) {
  const HostValues global = Iota(shape);
  const std::vector<Placements> all = AllPlacements(mesh.ndim(), choices);
  for (const Placements& from : all) {
    const DTensor source = distribute_tensor(ToTensor(global), mesh, from);
    sync();  // The source is device data, so redistribute reshards it on the devices.
    for (const Placements& to : all) {
      SCOPED_TRACE(absl::StrCat("from ", Describe(from)));
      ExpectLayout(source.redistribute(to), global, to);
    }
  }
}

TEST(DTensorTest, RedistributeEveryPairOn1DMesh) {
  RedistributeEveryPair(DeviceMesh({2, 0, 3, 1}, {4}), {6, 5}, AxisChoices());
}

TEST(DTensorTest, FullRedistributeEveryPairOn2x2Mesh) {
  if (!FullMatrix()) GTEST_SKIP() << "set VKSPMD_FULL_DTENSOR=1 (ctest -L slow)";
  RedistributeEveryPair(DeviceMesh({3, 1, 0, 2}, {2, 2}, {"x", "y"}), {5, 6},
                        {Shard{0}, Shard{1}, Replicate{}, Partial{ReduceOp::kSum}});
}

TEST(DTensorTest, RedistributeOnTwoAxesAndToAnotherMesh) {
  const HostValues global = Iota({5, 6});
  const DeviceMesh mesh({3, 1, 0, 2}, {2, 2}, {"x", "y"});
  DTensor tiles = distribute_tensor(ToTensor(global), mesh, {Shard{0}, Shard{1}});
  sync();
  ExpectLayout(tiles.redistribute({Shard{1}, Shard{0}}), global, {Shard{1}, Shard{0}});
  ExpectLayout(tiles.redistribute({Shard{0}, Shard{0}}), global, {Shard{0}, Shard{0}});
  ExpectLayout(tiles.redistribute({Partial{}, Shard{1}}), global, {Partial{}, Shard{1}});
  const DeviceMesh other({1, 2}, {2});
  ExpectLayout(tiles.redistribute(other, {Shard{1}}), global, {Shard{1}});
}

TEST(DTensorTest, RedistributeEmitsTheCheapestCollectives) {
  const DeviceMesh mesh({2, 0, 3, 1}, {4}, {"x"});
  const HostValues global = Iota({8, 4});
  const DTensor rows = distribute_tensor(ToTensor(global), mesh, {Shard{0}});
  const DTensor replicated = distribute_tensor(ToTensor(global), mesh, {Replicate{}});
  const DTensor partial = distribute_tensor(ToTensor(global), mesh, {Partial{}});
  sync();
  EXPECT_THAT(rows.redistribute_collectives(mesh, {Replicate{}}),
              ElementsAre("all-gather along x"));
  EXPECT_THAT(rows.redistribute_collectives(mesh, {Shard{1}}), ElementsAre("all-to-all along x"));
  EXPECT_THAT(replicated.redistribute_collectives(mesh, {Shard{0}}), IsEmpty());
  EXPECT_THAT(partial.redistribute_collectives(mesh, {Replicate{}}),
              ElementsAre("all-reduce along x"));
  // The addends' dim moved by one all-to-all, then summed locally: the bytes of a
  // reduce-scatter, (g-1)/g of one device's addend.
  EXPECT_THAT(partial.redistribute_collectives(mesh, {Shard{0}}),
              ElementsAre("all-to-all along x"));
  const DeviceMesh square({3, 1, 0, 2}, {2, 2}, {"x", "y"});
  const DTensor tiles = distribute_tensor(ToTensor(global), square, {Shard{0}, Shard{1}});
  sync();
  EXPECT_THAT(tiles.redistribute_collectives(square, {Shard{0}, Replicate{}}),
              ElementsAre("all-gather along y"));
  EXPECT_THAT(tiles.redistribute_collectives(square, {Shard{0}, Shard{1}}), IsEmpty());
}

// Four devices' addends and their sum, mean, max and min (by hand).
const std::vector<std::vector<float>> kAddends = {{1, -2, 3}, {4, 5, -6}, {0, 0, 0}, {-1, 7, 2}};

std::vector<Tensor> AddendTensors() {
  std::vector<Tensor> locals;
  for (const std::vector<float>& addend : kAddends) locals.push_back(tensor(addend));
  return locals;
}

TEST(DTensorTest, PartialReducesTheLocalValues) {
  const DeviceMesh mesh({1, 3, 0, 2}, {4});
  const std::vector<std::pair<ReduceOp, std::vector<float>>> cases = {
      {ReduceOp::kSum, {4, 10, -1}},
      {ReduceOp::kAvg, {1, 2.5, -0.25}},
      {ReduceOp::kMax, {4, 7, 3}},
      {ReduceOp::kMin, {-1, -2, -6}}};
  for (const auto& [op, expected] : cases) {
    const DTensor pending = from_local(AddendTensors(), mesh, {Partial{op}});
    SCOPED_TRACE(pending.to_string());
    EXPECT_EQ(pending.full_tensor().to_vector<float>(), expected);
    // Each device still holds its own addend until the reduction is asked for.
    const std::vector<Tensor> locals = pending.to_local();
    for (size_t i = 0; i < locals.size(); ++i) {
      EXPECT_EQ(locals[i].to_vector<float>(), kAddends[i]);
    }
    // Shard(0) of 3 elements over 4 devices: chunks 1, 1, 1, 0.
    const std::vector<Tensor> shards = pending.redistribute({Shard{0}}).to_local();
    for (size_t i = 0; i < shards.size(); ++i) {
      const std::vector<float> piece =
          i < expected.size() ? std::vector<float>{expected[i]} : std::vector<float>{};
      EXPECT_EQ(shards[i].to_vector<float>(), piece);
    }
  }
}

TEST(DTensorTest, PartialOnOneAxisOfA2DMesh) {
  // Axis x pending sum, axis y splitting dim 0: device (i, j) holds rows j of addend i.
  const DeviceMesh mesh({3, 1, 0, 2}, {2, 2}, {"x", "y"});
  std::vector<Tensor> locals;
  for (int64_t i = 0; i < 4; ++i) {
    locals.push_back(tensor(std::vector<float>{static_cast<float>(i), 10}));
  }
  const DTensor pending = from_local(locals, mesh, {Partial{}, Shard{0}});
  EXPECT_EQ(pending.shape(), std::vector<int64_t>({4}));
  // Rows from y: [l0, l1] + [l2, l3] over x.
  EXPECT_EQ(pending.full_tensor().to_vector<float>(), std::vector<float>({2, 20, 4, 20}));
  const DTensor kept = pending.redistribute({Partial{}, Replicate{}});
  EXPECT_EQ(kept.to_local()[0].to_vector<float>(), std::vector<float>({0, 10, 1, 10}));
  EXPECT_EQ(kept.full_tensor().to_vector<float>(), std::vector<float>({2, 20, 4, 20}));
}

TEST(DTensorTest, FromLocalConcatenatesUnevenShards) {
  const DeviceMesh mesh({2, 0, 1}, {3});
  const DTensor joined =
      from_local({tensor(std::vector<float>{1, 2}), tensor(std::vector<float>{3, 4}),
                  tensor(std::vector<float>{5})},
                 mesh, {Shard{0}});
  EXPECT_EQ(joined.full_tensor().to_vector<float>(), std::vector<float>({1, 2, 3, 4, 5}));
}

TEST(DTensorTest, OpsPropagatePlacements) {
  const DeviceMesh mesh({1, 0}, {2});
  const HostValues a = Iota({4, 6}), b = Iota({6, 2});
  const DTensor rows = distribute_tensor(ToTensor(a), mesh, {Shard{0}});
  const DTensor sum = rows + distribute_tensor(ToTensor(a), mesh, {Replicate{}});
  EXPECT_EQ(sum.placements(), Placements({Shard{0}}));
  EXPECT_EQ(sum.full_tensor().to_vector<float>(), (ToTensor(a) * 2.0).to_vector<float>());
  const DTensor product = matmul(rows, distribute_tensor(ToTensor(b), mesh, {Replicate{}}));
  EXPECT_EQ(product.placements(), Placements({Shard{0}}));
  const Tensor reference = ToTensor(a).matmul(ToTensor(b));
  EXPECT_EQ(product.full_tensor().to_vector<float>(), reference.to_vector<float>());
  // A contraction over sharded dims: a pending Partial(sum), as PyTorch (dtensor_ops_test.cc).
  const DTensor contracted = matmul(distribute_tensor(ToTensor(a), mesh, {Shard{1}}),
                                    distribute_tensor(ToTensor(b), mesh, {Shard{0}}));
  EXPECT_EQ(contracted.placements(), Placements({Partial{}}));
  EXPECT_EQ(contracted.full_tensor().to_vector<float>(), reference.to_vector<float>());
  // A Partial operand is reduced before the op.
  const DTensor partial = from_local({ToTensor(a), ToTensor(a)}, mesh, {Partial{}});
  EXPECT_EQ((partial - rows).full_tensor().to_vector<float>(), ToTensor(a).to_vector<float>());
}

TEST(DTensorTest, MisuseIsAClearError) {
  const DeviceMesh mesh({0, 1, 2, 3}, {2, 2}, {"x", "y"});
  const Tensor t = ToTensor(Iota({4, 4}));
  EXPECT_THAT(ThrownMessage([&] { distribute_tensor(t, mesh, {Shard{0}}); }),
              HasSubstr("give 1 placement(s) but the mesh"));
  EXPECT_THAT(ThrownMessage([&] {
                distribute_tensor(t, mesh, {Shard{2}, Replicate{}});
              }),
              HasSubstr("Shard(dim=2) is out of range for a tensor of 2 dim(s)"));
  EXPECT_THAT(ThrownMessage([&] { DeviceMesh({0, 1, 1, 2}, {2, 2}); }), HasSubstr("twice"));
  EXPECT_THAT(ThrownMessage([&] {
                DeviceMesh({0, 1, 2}, {2, 2});
              }),
              HasSubstr("holds 4 devices but 3 device ids were given"));
  EXPECT_THAT(ThrownMessage([&] {
                from_local({t}, mesh, {Replicate{}, Replicate{}});
              }),
              HasSubstr("1 local tensor(s) for"));
  EXPECT_THAT(ThrownMessage([&] {
                (void)(distribute_tensor(t, mesh, {Replicate{}, Replicate{}}) +
                       distribute_tensor(t, DeviceMesh({1, 0}, {2}), {Replicate{}}));
              }),
              HasSubstr("different meshes"));
  EXPECT_THAT(ThrownMessage([&] { (void)Placement(Replicate{}).dim(); }),
              HasSubstr("Replicate() has no dim"));
}

TEST(DTensorTest, ShardCountsNegativeDimsFromTheEnd) {
  const HostValues global = Iota({3, 4});
  const DTensor columns = distribute_tensor(ToTensor(global), DeviceMesh({0, 1}, {2}), {Shard{-1}});
  EXPECT_EQ(columns.placements(), Placements({Shard{1}}));
  ExpectLayout(columns, global, {Shard{1}});
}

}  // namespace
}  // namespace vkspmd::testing
