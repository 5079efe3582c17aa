// axis_index (JAX's lax.axis_index) in manual regions on lavapipe devices with validation: each
// device's coordinate along mesh axes on 1-D and 2-D meshes, permuted ones included, against hand
// values and the reference evaluator run per emulated device; misuse errors.
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
