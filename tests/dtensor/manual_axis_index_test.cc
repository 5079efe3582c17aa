// axis_index (JAX's lax.axis_index) in manual regions on lavapipe devices with validation: each
// device's coordinate along mesh axes on 1-D and 2-D meshes, permuted ones included, against hand
// values and the reference evaluator run per emulated device; in regions with auto axes (2x2,
// 2x4) the index along the manual axis and the error for an auto one; misuse errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "src/api/api_support.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/lazy/lowering.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::ElementsAreArray;
using ::testing::HasSubstr;

std::vector<double> AsDoubles(const ir::Literal& value) {
  std::vector<double> result;
  for (int64_t i = 0; i < value.ElementCount(); ++i) result.push_back(value.GetAsDouble(i));
  return result;
}

std::vector<float> Iota(int64_t count) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(i);
  return values;
}

// Checks `result` on the reference evaluator (first: it reads the graph before the sync) and on
// the devices against `expected`.
template <typename T>
void ExpectValues(const Tensor& result, const std::vector<T>& expected, const std::string& what) {
  SCOPED_TRACE(what);
  const std::vector<double> want(expected.begin(), expected.end());
  EXPECT_THAT(AsDoubles(MeshReferenceValue(result)), ElementsAreArray(want)) << "reference";
  EXPECT_THAT(result.to_vector<T>(), ElementsAreArray(expected)) << "devices";
}

class AxisIndexTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)Mesh({4}); }
};

// Each device's index alone, gathered by the out_spec: [0, 1, 2, 3] in mesh order whatever the
// device ids (a permuted mesh would give its ids' order if the index came from the id).
TEST_F(AxisIndexTest, OneDimensionalMeshGivesEachDeviceItsPosition) {
  for (const Mesh& mesh : {Mesh({4}, {}, {"x"}), Mesh({4}, {2, 0, 3, 1}, {"x"})}) {
    auto indices = shard_map(
        [](const std::vector<Tensor>& s) {
          return std::vector<Tensor>{reshape(axis_index(s[0], {"x"}), {1})};
        },
        mesh, {{None}}, {{"x"}});
    Tensor index = indices({tensor(Iota(4), {4})})[0];
    EXPECT_EQ(index.dtype(), int32);
    ExpectValues<int32_t>(index, {0, 1, 2, 3}, mesh.to_string());
    // x + 10 * axis_index on an [8] split over x: device k adds 10k to elements 2k, 2k+1.
    auto shifted = shard_map(
        [](const std::vector<Tensor>& s) {
          return std::vector<Tensor>{s[0] + axis_index(s[0], {"x"}).to(float32) * 10.0};
        },
        mesh, {{"x"}}, {{"x"}});
    ExpectValues<float>(shifted({tensor(Iota(8), {8})})[0], {0, 1, 12, 13, 24, 25, 36, 37},
                        mesh.to_string());
  }
}

// 2x2 (x, y), X [4,4] split both ways: device (i, j) holds block (i, j) and adds 10i + j, and
// its index over (x, y) is 2i + j. The permuted mesh puts other devices at each coordinate but
// the blocks and indices follow the coordinates, so the values are the same.
TEST_F(AxisIndexTest, TwoDimensionalMeshesIncludingPermutedDevices) {
  for (const Mesh& mesh : {Mesh({2, 2}, {}, {"x", "y"}), Mesh({2, 2}, {3, 1, 0, 2}, {"x", "y"}),
                           Mesh({2, 2}, {1, 3, 0, 2}, {"x", "y"})}) {
    auto shifted = shard_map(
        [](const std::vector<Tensor>& s) {
          const Tensor i = axis_index(s[0], {"x"}), j = axis_index(s[0], {"y"});
          return std::vector<Tensor>{s[0] + (i * 10 + j).to(float32)};
        },
        mesh, {{"x", "y"}}, {{"x", "y"}});
    std::vector<float> expected(16);
    for (int64_t row = 0; row < 4; ++row) {
      for (int64_t col = 0; col < 4; ++col) {
        expected[row * 4 + col] = static_cast<float>(row * 4 + col + 10 * (row / 2) + col / 2);
      }
    }
    ExpectValues<float>(shifted({tensor(Iota(16), {4, 4})})[0], expected, mesh.to_string());
    // Over both axes, first major; and with the axes reversed, (y, x): j * 2 + i.
    auto linear = shard_map(
        [](const std::vector<Tensor>& s) {
          return std::vector<Tensor>{reshape(axis_index(s[0], {"x", "y"}), {1, 1}),
                                     reshape(axis_index(s[0], {"y", "x"}), {1, 1})};
        },
        mesh, {{None, None}}, {{"x", "y"}, {"x", "y"}});
    const std::vector<Tensor> both = linear({tensor(Iota(4), {2, 2})});
    ExpectValues<int32_t>(both[0], {0, 1, 2, 3}, mesh.to_string() + " (x, y)");
    ExpectValues<int32_t>(both[1], {0, 2, 1, 3}, mesh.to_string() + " (y, x)");
  }
}

// The index is an integer constant per device: x's gradient passes through x + axis_index.
TEST_F(AxisIndexTest, GradientFlowsThroughTheOtherOperand) {
  const Mesh mesh({4}, {}, {"x"});
  auto shifted = shard_map(
      [](const std::vector<Tensor>& s) {
        return std::vector<Tensor>{s[0] * axis_index(s[0], {"x"}).to(float32)};
      },
      mesh, {{"x"}}, {{"x"}});
  Tensor x = tensor(Iota(8), {8});
  Tensor dx = grad(sum(shifted({x})[0]), {x})[0];
  EXPECT_THAT(dx.to_vector<float>(), ElementsAreArray({0, 0, 1, 1, 2, 2, 3, 3}));
}

// XLA's form: partition-id annotated {manual} inside the region, then the coordinate table.
TEST_F(AxisIndexTest, TracesAManualPartitionIdAndACoordinateTable) {
  const Mesh mesh({2, 2}, {3, 1, 0, 2}, {"x", "y"});
  Tensor shard = enable_manual_sharding(tensor(Iota(4), {4}), mesh, {None});
  Tensor full =
      disable_manual_sharding(reshape(axis_index(shard, {"y"}), {1, 1}), mesh, {"x", "y"}, {2, 2});
  lazy::NodePtr node = lazy::NodeOf(full);
  absl::StatusOr<lazy::LoweredGraph> graph = lazy::Lower({node}, node->placement);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string text = ir::PrintModule(*graph->module);
  EXPECT_THAT(text, HasSubstr("partition-id(), sharding={manual}"));
  // Local ids 3, 1, 0, 2 sit at (0,0), (0,1), (1,0), (1,1): their y coordinates by id.
  EXPECT_THAT(text, HasSubstr("s32[4]{0} constant({0, 1, 1, 0})"));
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::PrintModule(**parsed), text);
}

// In a region with auto axes (JAX's shard_map(auto=)) the index along a manual axis is each
// device's coordinate there, whatever the partitioner does with the auto axes; mark_sharding
// inside splits the region's value over them. X[r, c] = cols * r + c; every test adds 10 times
// the manual index to each device's block, so the expected values are X plus 10 times the block's
// coordinate along the manual axis.
class AxisIndexAutoAxesTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)Mesh({8}); }
};

// `x` (rows x cols) through a region manual over `manual` ("dp": rows split, "tp": columns),
// automatic over the other axis (`mark_sharding` splits the other dim over it inside), adding
// 10 * axis_index(manual).
Tensor AddTenTimesIndex(const Mesh& mesh, const std::string& manual, const std::string& automatic,
                        const Tensor& x) {
  const bool rows = manual == "dp";
  const PartitionSpec spec = rows ? PartitionSpec{manual, None} : PartitionSpec{None, manual};
  auto shifted = shard_map(
      [&mesh, rows, manual, automatic](const std::vector<Tensor>& s) {
        Tensor block = s[0];
        mark_sharding(block, mesh,
                      rows ? PartitionSpec{None, automatic} : PartitionSpec{automatic, None});
        return std::vector<Tensor>{block + axis_index(block, {manual}).to(float32) * 10.0};
      },
      mesh, {spec}, {spec}, {automatic});
  return shifted({x})[0];
}

std::vector<float> Expected(int64_t rows, int64_t cols, int64_t block_rows, int64_t block_cols) {
  std::vector<float> expected(rows * cols);
  for (int64_t r = 0; r < rows; ++r) {
    for (int64_t c = 0; c < cols; ++c) {
      expected[r * cols + c] =
          static_cast<float>(r * cols + c + 10 * (r / block_rows) + 10 * (c / block_cols));
    }
  }
  return expected;
}

TEST_F(AxisIndexAutoAxesTest, ManualAxisIndexOn2x2And2x4) {
  // 2x2 (dp, tp), manual over tp: the column halves get +0, +10; manual over dp: the row halves.
  const Mesh square({2, 2}, {}, {"dp", "tp"});
  ExpectValues<float>(AddTenTimesIndex(square, "tp", "dp", tensor(Iota(16), {4, 4})),
                      Expected(4, 4, 4, 2), "2x2 manual tp");
  ExpectValues<float>(AddTenTimesIndex(square, "dp", "tp", tensor(Iota(16), {4, 4})),
                      Expected(4, 4, 2, 4), "2x2 manual dp");
  // 2x4: manual over tp (4 column blocks: +0, +10, +20, +30) or over dp (2 row blocks), on the
  // mesh in order and on one listing its devices backwards (the index is the coordinate).
  for (const Mesh& mesh :
       {Mesh({2, 4}, {}, {"dp", "tp"}), Mesh({2, 4}, {7, 6, 5, 4, 3, 2, 1, 0}, {"dp", "tp"})}) {
    ExpectValues<float>(AddTenTimesIndex(mesh, "tp", "dp", tensor(Iota(32), {4, 8})),
                        Expected(4, 8, 4, 2), mesh.to_string() + " manual tp");
    ExpectValues<float>(AddTenTimesIndex(mesh, "dp", "tp", tensor(Iota(32), {4, 8})),
                        Expected(4, 8, 2, 8), mesh.to_string() + " manual dp");
  }
  // The index alone, one value per tp coordinate gathered by the out_spec: 0, 1, 2, 3.
  const Mesh mesh({2, 4}, {}, {"dp", "tp"});
  auto indices = shard_map(
      [](const std::vector<Tensor>& s) {
        return std::vector<Tensor>{reshape(axis_index(s[0], {"tp"}), {1, 1})};
      },
      mesh, {{None, None}}, {{None, "tp"}}, {"dp"});
  ExpectValues<int32_t>(indices({tensor(Iota(4), {2, 2})})[0], {0, 1, 2, 3}, "tp indices");
}

// Two manual axes of a 2x2x2 (x, y, z) mesh, y automatic: the index over (x, z) is 2 x + z, and
// over (z, x) 2 z + x, one value per (x, z) block of a [2, 2] output.
TEST_F(AxisIndexAutoAxesTest, SeveralManualAxesAroundAnAutoOne) {
  const Mesh mesh({2, 2, 2}, {}, {"x", "y", "z"});
  auto indices = shard_map(
      [&mesh](const std::vector<Tensor>& s) {
        Tensor block = s[0];
        mark_sharding(block, mesh, {"y", None});
        return std::vector<Tensor>{reshape(axis_index(block, {"x", "z"}), {1, 1}),
                                   reshape(axis_index(block, {"z", "x"}), {1, 1})};
      },
      mesh, {{None, None}}, {{"x", "z"}, {"x", "z"}}, {"y"});
  const std::vector<Tensor> both = indices({tensor(Iota(16), {4, 4})});
  ExpectValues<int32_t>(both[0], {0, 1, 2, 3}, "(x, z)");
  ExpectValues<int32_t>(both[1], {0, 2, 1, 3}, "(z, x)");
}

// x's gradient through x * (axis_index + 1) in a region manual over tp, automatic over dp:
// column block k of dx is k + 1.
TEST_F(AxisIndexAutoAxesTest, GradientFlowsThroughTheOtherOperand) {
  const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  auto scaled = shard_map(
      [&mesh](const std::vector<Tensor>& s) {
        Tensor block = s[0];
        mark_sharding(block, mesh, {"dp", None});
        return std::vector<Tensor>{block * (axis_index(block, {"tp"}).to(float32) + 1.0)};
      },
      mesh, {{None, "tp"}}, {{None, "tp"}}, {"dp"});
  Tensor x = tensor(Iota(16), {4, 4});
  Tensor dx = grad(sum(scaled({x})[0]), {x})[0];
  std::vector<float> expected(16);
  for (int64_t i = 0; i < 16; ++i) expected[i] = static_cast<float>((i % 4) / 2 + 1);
  ExpectValues<float>(dx, expected, "dx");
}

// The partition-id carries the region's manual subgroup (manual over tp, the dp copies
// replicated), so RegionManualAxes reads the region back from values derived from it.
TEST_F(AxisIndexAutoAxesTest, TracesThePartitionIdWithTheManualSubgroup) {
  const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  Tensor shard = enable_manual_sharding(tensor(Iota(4), {4}), mesh, {None}, {"dp"});
  Tensor index = reshape(axis_index(shard, {"tp"}), {1});
  EXPECT_THAT(ThrownMessage([&] { all_reduce(index, {"dp"}); }),
              HasSubstr("all_reduce: mesh axis \"dp\" is automatic in this manual region"));
  Tensor full = disable_manual_sharding(index, mesh, {"tp"}, {2});
  lazy::NodePtr node = lazy::NodeOf(full);
  absl::StatusOr<lazy::LoweredGraph> graph = lazy::Lower({node}, node->placement);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string text = ir::PrintModule(*graph->module);
  EXPECT_THAT(text, HasSubstr("partition-id(), sharding={devices=[2,2]<=[2,2]T(1,0) "
                              "last_tile_dims={manual, replicated}}"));
  // Ids 0..3 at (0,0), (0,1), (1,0), (1,1): their tp coordinates by id.
  EXPECT_THAT(text, HasSubstr("s32[4]{0} constant({0, 1, 0, 1})"));
  sync();
}

// As JAX: the index along an auto axis is an error (the partitioner, not the program, decides
// which device holds which part there), naming the axis and the region's manual axes.
TEST_F(AxisIndexAutoAxesTest, AnAutoAxisIsAClearError) {
  const Mesh mesh({2, 4}, {}, {"dp", "tp"});
  Tensor shard = enable_manual_sharding(tensor(Iota(32), {4, 8}), mesh, {None, "tp"}, {"dp"});
  EXPECT_THAT(ThrownMessage([&] { axis_index(shard, {"dp"}); }),
              HasSubstr("axis_index: mesh axis \"dp\" is automatic in this manual region (manual "
                        "over tp); a device's index along an automatic axis"));
  EXPECT_THAT(ThrownMessage([&] {
                axis_index(shard, {"tp", "dp"});
              }),
              HasSubstr("axis_index: mesh axis \"dp\" is automatic"));
  EXPECT_THAT(ThrownMessage([&] { axis_index(shard, {"zz"}); }),
              HasSubstr("axis_index: unknown mesh axis 'zz'"));
  sync();
}

TEST_F(AxisIndexTest, MisuseIsAClearError) {
  const Mesh mesh({4}, {}, {"x"});
  EXPECT_THAT(ThrownMessage([&] { axis_index(tensor(Iota(4), {4}), {"x"}); }),
              HasSubstr("axis_index: the f32[4] operand is not inside a manual sharding region"));
  Tensor shard = enable_manual_sharding(tensor(Iota(8), {8}), mesh, {"x"});
  EXPECT_THAT(ThrownMessage([&] { axis_index(shard, {"tp"}); }),
              HasSubstr("axis_index: unknown mesh axis 'tp'"));
  EXPECT_THAT(ThrownMessage([&] {
                axis_index(shard, {"x", "x"});
              }),
              HasSubstr("axis_index: mesh axis \"x\" twice"));
  EXPECT_THAT(ThrownMessage([&] { axis_index(shard, {}); }),
              HasSubstr("axis_index: no mesh axis given"));
  sync();
}

}  // namespace
}  // namespace vkspmd::testing
