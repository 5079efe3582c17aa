// Manual sharding on lavapipe devices with validation: a Megatron MLP written with an explicit
// all_reduce in shard_map equals the automatic (mark_sharding) one and the unsharded one, forward
// and backward, on 2, 4 and 2x2 meshes; each collective against hand-computed values and the CPU
// reference evaluator (which runs the region per emulated device), its gradient against the
// transpose of the hand-computed linear map; misuse errors name the op and the axis.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <vector>

#include "src/api/api_support.h"
#include "src/ir/parser.h"
#include "src/ir/printer.h"
#include "src/lazy/lowering.h"
#include "src/lazy/tensor_state.h"
#include "tests/dtensor/manual_mlp.h"
#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

using ::testing::HasSubstr;
using Values = std::vector<float>;

Values MeshReference(const Tensor& tensor) {
  const ir::Literal value = MeshReferenceValue(tensor);
  Values result;
  for (int64_t i = 0; i < value.ElementCount(); ++i) result.push_back(value.GetAsDouble(i));
  return result;
}

void ExpectNear(const Values& actual, const Values& expected, double tolerance,
                const std::string& what) {
  ASSERT_EQ(actual.size(), expected.size()) << what;
  for (size_t i = 0; i < actual.size(); ++i) {
    ASSERT_NEAR(actual[i], expected[i], tolerance) << what << " element " << i;
  }
}

Values Iota(int64_t count) {
  Values values(count);
  for (int64_t i = 0; i < count; ++i) values[i] = static_cast<float>(i);
  return values;
}

class ManualTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { (void)Mesh({4}); }
};

// ---------------------------------------------------------------------------------------------
// Megatron MLP: tanh(x W1) W2 with W1 split by columns and W2 by rows over "tp".

struct MlpRun {
  Values output, dx, dw1, dw2;
};

MlpRun Finish(const MlpInputs& in, const Tensor& output) {
  const std::vector<Tensor> grads = grad(sum(output * in.cotangent), {in.x, in.w1, in.w2});
  return {output.to_vector<float>(), grads[0].to_vector<float>(), grads[1].to_vector<float>(),
          grads[2].to_vector<float>()};
}

MlpRun Unsharded() {
  MlpInputs in = Inputs();
  return Finish(in, matmul(tanh(matmul(in.x, in.w1)), in.w2));
}

// mark_sharding's Megatron layout: the partitioner inserts the all-reduce.
MlpRun Automatic(const Mesh& mesh, const PartitionSpec& x_spec) {
  MlpInputs in = Inputs();
  mark_sharding(in.x, mesh, x_spec);
  mark_sharding(in.w1, mesh, {None, "tp"});
  mark_sharding(in.w2, mesh, {"tp", None});
  return Finish(in, matmul(tanh(matmul(in.x, in.w1)), in.w2));
}

// The same layout written by hand: per-device shards and one explicit all_reduce over "tp".
MlpRun Manual(const Mesh& mesh, const PartitionSpec& x_spec) {
  MlpInputs in = Inputs();
  auto mlp = shard_map(
      [](const std::vector<Tensor>& shards) {
        const Tensor partial = matmul(tanh(matmul(shards[0], shards[1])), shards[2]);
        return std::vector<Tensor>{all_reduce(partial, {"tp"})};
      },
      mesh, {x_spec, {None, "tp"}, {"tp", None}}, {x_spec});
  return Finish(in, mlp({in.x, in.w1, in.w2})[0]);
}

void ExpectSameRun(const MlpRun& actual, const MlpRun& expected, const std::string& what) {
  ExpectNear(actual.output, expected.output, 1e-5, what + " output");
  ExpectNear(actual.dx, expected.dx, 1e-5, what + " dx");
  ExpectNear(actual.dw1, expected.dw1, 1e-5, what + " dw1");
  ExpectNear(actual.dw2, expected.dw2, 1e-5, what + " dw2");
}

TEST_F(ManualTest, MegatronMlpWithExplicitAllReduceEqualsAutomatic) {
  const MlpRun reference = Unsharded();
  for (int64_t devices : {2, 4}) {
    const Mesh mesh({devices}, {}, {"tp"});
    const std::string what = "tp=" + std::to_string(devices);
    ExpectSameRun(Automatic(mesh, {None, None}), reference, what + " automatic");
    ExpectSameRun(Manual(mesh, {None, None}), reference, what + " manual");
  }
  // 2x2: the batch split over "dp" too; W1 and W2 are replicated over "dp", so their gradients
  // are summed over it by the region's boundary (JAX's psum over the axes a spec leaves out).
  const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  ExpectSameRun(Automatic(mesh, {"dp", None}), reference, "2x2 automatic");
  ExpectSameRun(Manual(mesh, {"dp", None}), reference, "2x2 manual");
  // A permuted mesh: groups follow the mesh's ids.
  ExpectSameRun(Manual(Mesh({2, 2}, {3, 1, 0, 2}, {"dp", "tp"}), {"dp", None}), reference,
                "permuted 2x2 manual");
}

TEST_F(ManualTest, EnableAndDisableTraceXlasCustomCalls) {
  const Mesh mesh({2}, {}, {"tp"});
  Tensor x = tensor(Iota(8), {2, 4});
  Tensor shard = enable_manual_sharding(x, mesh, {None, "tp"});
  EXPECT_EQ(shard.shape(), std::vector<int64_t>({2, 2}));
  Tensor full = disable_manual_sharding(shard * 2.0, mesh, {None, "tp"}, {2, 4});
  lazy::NodePtr node = lazy::NodeOf(full);
  absl::StatusOr<lazy::LoweredGraph> graph = lazy::Lower({node}, node->placement);
  ASSERT_TRUE(graph.ok()) << graph.status();
  const std::string text = ir::PrintModule(*graph->module);
  EXPECT_THAT(text, HasSubstr("custom_call_target=\"SPMDFullToShardShape\", sharding={manual}"));
  EXPECT_THAT(text, HasSubstr("custom_call_target=\"Sharding\", sharding={manual}"));
  EXPECT_THAT(text,
              HasSubstr("custom_call_target=\"SPMDShardToFullShape\", sharding={devices=[1,2]"));
  // The printed module parses back to the same text (HLO text round-trips).
  absl::StatusOr<std::unique_ptr<ir::Module>> parsed = ir::ParseModule(text);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(ir::PrintModule(**parsed), text);
  ExpectNear(full.to_vector<float>(), {0, 2, 4, 6, 8, 10, 12, 14}, 0, "x * 2");
}

// ---------------------------------------------------------------------------------------------
// Each collective in shard_map: the global result (the per-device results concatenated by the
// out_spec) against values computed here from the shards, and against the reference evaluator.
// Every collective is linear, so its gradient must be the transpose of the same host map:
// d/dx sum(c * f(x)) = sum_o c_o f(e_i)_o for each basis vector e_i.

using HostMap = std::function<Values(const Values&)>;

struct CollectiveCase {
  std::string name;
  Mesh mesh;
  std::vector<int64_t> shape;
  PartitionSpec in_spec, out_spec;
  std::function<Tensor(const Tensor&)> body;
  HostMap expected;
  bool linear = true;
};

void RunCase(const CollectiveCase& c) {
  SCOPED_TRACE(c.name);
  int64_t count = 1;
  for (int64_t d : c.shape) count *= d;
  const Values input = Pattern(count, 5);
  auto mapped = shard_map(
      [&](const std::vector<Tensor>& shards) { return std::vector<Tensor>{c.body(shards[0])}; },
      c.mesh, {c.in_spec}, {c.out_spec});
  Tensor x = tensor(input, c.shape);
  Tensor y = mapped({x})[0];
  const Values want = c.expected(input);
  ExpectNear(MeshReference(y), want, 0, "reference evaluator");
  ExpectNear(y.to_vector<float>(), want, 0, "devices");
  if (!c.linear) return;
  const Values cotangent = Pattern(static_cast<int64_t>(want.size()), 2);
  Tensor x2 = tensor(input, c.shape);
  Tensor y2 = mapped({x2})[0];
  const Values dx = grad(sum(y2 * tensor(cotangent, y2.shape())), {x2})[0].to_vector<float>();
  Values expected_dx(count, 0);
  for (int64_t i = 0; i < count; ++i) {
    Values basis(count, 0);
    basis[i] = 1;
    const Values column = c.expected(basis);
    for (size_t o = 0; o < column.size(); ++o) expected_dx[i] += cotangent[o] * column[o];
  }
  ExpectNear(dx, expected_dx, 1e-5, "gradient");
}

// 1-D mesh x=4, X [8,4] split by rows: device k holds rows 2k, 2k+1 (X_k).
constexpr int64_t kRows = 8, kCols = 4, kShardRows = 2, kDevices = 4;
float At(const Values& x, int64_t row, int64_t col) { return x[row * kCols + col]; }

std::vector<CollectiveCase> OneDimensionalCases() {
  const Mesh mesh({kDevices}, {}, {"x"});
  const std::vector<int64_t> shape = {kRows, kCols};
  std::vector<CollectiveCase> cases;
  const auto add = [&](const std::string& name, std::function<Tensor(const Tensor&)> body,
                       HostMap expected, bool linear = true) {
    cases.push_back({name,
                     mesh,
                     shape,
                     {"x", None},
                     {"x", None},
                     std::move(body),
                     std::move(expected),
                     linear});
  };
  add(
      "all_reduce sum", [](const Tensor& t) { return all_reduce(t, {"x"}); },
      [](const Values& x) {
        Values out;
        for (int64_t row = 0; row < kRows; ++row) {
          for (int64_t col = 0; col < kCols; ++col) {
            float total = 0;
            for (int64_t k = 0; k < kDevices; ++k) {
              total += At(x, k * kShardRows + row % kShardRows, col);
            }
            out.push_back(total);
          }
        }
        return out;
      });
  add(
      "all_reduce max", [](const Tensor& t) { return all_reduce(t, {"x"}, ReduceOp::kMax); },
      [](const Values& x) {
        Values out;
        for (int64_t row = 0; row < kRows; ++row) {
          for (int64_t col = 0; col < kCols; ++col) {
            float best = At(x, row % kShardRows, col);
            for (int64_t k = 1; k < kDevices; ++k) {
              best = std::max(best, At(x, k * kShardRows + row % kShardRows, col));
            }
            out.push_back(best);
          }
        }
        return out;
      },
      false);
  // Every device gets all of X; the out_spec stacks the four copies: [32,4].
  add(
      "all_gather", [](const Tensor& t) { return all_gather(t, {"x"}, 0); },
      [](const Values& x) {
        Values out;
        for (int64_t k = 0; k < kDevices; ++k) out.insert(out.end(), x.begin(), x.end());
        return out;
      });
  // The sum S of the shards, device k keeping column k: [8,1], rows 2k.. = S[:, k].
  add(
      "reduce_scatter", [](const Tensor& t) { return reduce_scatter(t, {"x"}, 1); },
      [](const Values& x) {
        Values out;
        for (int64_t k = 0; k < kDevices; ++k) {
          for (int64_t row = 0; row < kShardRows; ++row) {
            float total = 0;
            for (int64_t s = 0; s < kDevices; ++s) total += At(x, s * kShardRows + row, k);
            out.push_back(total);
          }
        }
        return out;
      });
  // Column j of every shard goes to device j, stacked in sender order: device j holds X[:, j].
  add(
      "all_to_all", [](const Tensor& t) { return all_to_all(t, {"x"}, 1, 0); },
      [](const Values& x) {
        Values out;
        for (int64_t j = 0; j < kCols; ++j) {
          for (int64_t row = 0; row < kRows; ++row) out.push_back(At(x, row, j));
        }
        return out;
      });
  // A shift by one without wrap-around: device 0 receives zeros.
  add(
      "ppermute",
      [](const Tensor& t) {
        return ppermute(t, "x", {{0, 1}, {1, 2}, {2, 3}});
      },
      [](const Values& x) {
        Values out(kShardRows * kCols, 0);
        out.insert(out.end(), x.begin(), x.end() - kShardRows * kCols);
        return out;
      });
  return cases;
}

TEST_F(ManualTest, CollectivesOnOneDimensionalMesh) {
  for (const CollectiveCase& c : OneDimensionalCases()) RunCase(c);
}

// all_reduce max/min's gradient: each element's summed adjoint goes in equal shares to the
// members holding the extremum (three distinct values over four devices: ties everywhere).
TEST_F(ManualTest, ExtremumAllReduceGradientSharesTheSummedAdjointAmongTies) {
  const Mesh mesh({kDevices}, {}, {"x"});
  Values input(kRows * kCols);
  for (int64_t i = 0; i < kRows * kCols; ++i) input[i] = static_cast<float>((i * 7 + 5) % 3) - 1;
  const Values cotangent = Pattern(kRows * kCols, 2);
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    const bool is_max = op == ReduceOp::kMax;
    SCOPED_TRACE(is_max ? "max" : "min");
    auto mapped = shard_map(
        [&](const std::vector<Tensor>& s) {
          return std::vector<Tensor>{all_reduce(s[0], {"x"}, op)};
        },
        mesh, {{"x", None}}, {{"x", None}});
    Tensor x = tensor(input, {kRows, kCols});
    Tensor y = mapped({x})[0];
    Tensor dx = grad(sum(y * tensor(cotangent, {kRows, kCols})), {x})[0];
    Values expected(kRows * kCols, 0);
    int64_t tied_elements = 0;
    for (int64_t row = 0; row < kShardRows; ++row) {
      for (int64_t col = 0; col < kCols; ++col) {
        float extremum = At(input, row, col), total = 0;
        for (int64_t k = 0; k < kDevices; ++k) {
          const float v = At(input, k * kShardRows + row, col);
          extremum = is_max ? std::max(extremum, v) : std::min(extremum, v);
          total += At(cotangent, k * kShardRows + row, col);
        }
        int64_t ties = 0;
        for (int64_t k = 0; k < kDevices; ++k)
          ties += At(input, k * kShardRows + row, col) == extremum;
        tied_elements += ties > 1;
        for (int64_t k = 0; k < kDevices; ++k) {
          if (At(input, k * kShardRows + row, col) == extremum) {
            expected[(k * kShardRows + row) * kCols + col] = total / static_cast<float>(ties);
          }
        }
      }
    }
    EXPECT_GT(tied_elements, 0) << "the pattern must exercise ties";
    ExpectNear(MeshReference(dx), expected, 1e-5, "reference evaluator");
    ExpectNear(dx.to_vector<float>(), expected, 1e-5, "devices");
  }
}

// 2x2 mesh (x, y), X [4,4] split both ways: device (i, j) holds the block B_ij at rows 2i..,
// cols 2j...
float Block(const Values& x, int64_t i, int64_t j, int64_t r, int64_t s) {
  return x[(2 * i + r) * 4 + 2 * j + s];
}

// The [4,4] value whose block (i, j) element (r, s) is element(i, j, r, s).
Values MapBlocks(const std::function<float(int64_t, int64_t, int64_t, int64_t)>& element) {
  Values out(16);
  for (int64_t i = 0; i < 2; ++i)
    for (int64_t j = 0; j < 2; ++j)
      for (int64_t r = 0; r < 2; ++r)
        for (int64_t s = 0; s < 2; ++s) out[(2 * i + r) * 4 + 2 * j + s] = element(i, j, r, s);
  return out;
}

TEST_F(ManualTest, CollectivesOnTwoDimensionalMesh) {
  const Mesh mesh({2, 2}, {}, {"x", "y"});
  const std::vector<int64_t> shape = {4, 4};
  const PartitionSpec both = {"x", "y"};
  RunCase({"all_reduce over y", mesh, shape, both, both,
           [](const Tensor& t) { return all_reduce(t, {"y"}); },
           [](const Values& x) {
             return MapBlocks([&](int64_t i, int64_t, int64_t r, int64_t s) {
               return Block(x, i, 0, r, s) + Block(x, i, 1, r, s);
             });
           }});
  RunCase({"all_reduce over (x, y)", mesh, shape, both, both,
           [](const Tensor& t) {
             return all_reduce(t, {"x", "y"});
           },
           [](const Values& x) {
             return MapBlocks([&](int64_t, int64_t, int64_t r, int64_t s) {
               return Block(x, 0, 0, r, s) + Block(x, 0, 1, r, s) + Block(x, 1, 0, r, s) +
                      Block(x, 1, 1, r, s);
             });
           }});
  RunCase({"ppermute over x", mesh, shape, both, both,
           [](const Tensor& t) {
             return ppermute(t, "x", {{0, 1}, {1, 0}});
           },
           [](const Values& x) {
             return MapBlocks([&](int64_t i, int64_t j, int64_t r, int64_t s) {
               return Block(x, 1 - i, j, r, s);
             });
           }});
  // Device (i, j) gathers [B_0j; B_1j] ([4,2]); the out_spec lays those out as [8,4].
  RunCase({"all_gather over x", mesh, shape, both, both,
           [](const Tensor& t) { return all_gather(t, {"x"}, 0); },
           [](const Values& x) {
             Values out;
             for (int64_t i = 0; i < 2; ++i)
               for (int64_t row = 0; row < 4; ++row)
                 for (int64_t col = 0; col < 4; ++col) out.push_back(x[row * 4 + col]);
             return out;
           }});
}

// ---------------------------------------------------------------------------------------------

TEST_F(ManualTest, MisuseIsAClearError) {
  const Mesh mesh({4}, {}, {"x"});
  EXPECT_THAT(
      ThrownMessage([&] {
        enable_manual_sharding(tensor(Iota(24), {6, 4}), mesh, {"x", None});
      }),
      HasSubstr("enable_manual_sharding: dim 0 of the f32[6,4] tensor does not split into 4 "
                "equal shards over mesh axes x"));
  Tensor shard = enable_manual_sharding(tensor(Iota(32), {8, 4}), mesh, {"x", None});
  EXPECT_THAT(ThrownMessage([&] { all_reduce(shard, {"tp"}); }),
              HasSubstr("all_reduce: unknown mesh axis 'tp'"));
  EXPECT_THAT(ThrownMessage([&] { all_gather(tensor(Iota(4), {4}), {"x"}, 0); }),
              HasSubstr("all_gather: the f32[4] operand is not inside a manual sharding region"));
  EXPECT_THAT(ThrownMessage([&] { reduce_scatter(shard, {"x"}, 0); }),
              HasSubstr("reduce_scatter: dim 0 of the f32[2,4] operand does not split into 4 equal "
                        "pieces over mesh axes x"));
  EXPECT_THAT(ThrownMessage([&] {
                ppermute(shard, "x", {{0, 1}, {2, 1}});
              }),
              HasSubstr("ppermute: position 1 of mesh axis x is a source or a target twice"));
  EXPECT_THAT(
      ThrownMessage([&] {
        disable_manual_sharding(shard, mesh, {"x", None}, {4, 4});
      }),
      HasSubstr("disable_manual_sharding: the per-device f32[2,4] is not the shard shape of "
                "f32[4,4]"));
  EXPECT_THAT(ThrownMessage([&] { (void)shard.to_vector<float>(); }),
              HasSubstr("inside a manual sharding region has one value per device"));
  Tensor maxed = all_reduce(shard, {"x"}, ReduceOp::kMax);
  auto wrong = shard_map([](const std::vector<Tensor>& s) { return s; }, mesh, {{"x", None}},
                         {{"x", None}, {None, None}});
  EXPECT_THAT(ThrownMessage([&] {
                wrong({tensor(Iota(32), {8, 4})});
              }),
              HasSubstr("shard_map: the function returned 1 values for 2 out_specs"));
  // A live tensor inside a region does not stop a sync of everything else.
  (void)maxed;
  sync();
}

// Every collective and mark_sharding in a region looks up the region's manual axes: a stored
// entry makes that O(1), where a walk back to the region's entry per call made a long region
// quadratic to trace (10,000 all-reduces after as many multiplies: about 10^8 steps of the walk).
// Traced only (nothing runs); the trace must take under 2 s.
TEST_F(ManualTest, ATwentyThousandOpRegionTracesInLinearTime) {
  const Mesh mesh({2}, {}, {"x"});
  Tensor y = enable_manual_sharding(tensor(Iota(8), {8}), mesh, {"x"});
  const auto start = std::chrono::steady_clock::now();
  for (int k = 0; k < 10000; ++k) y = all_reduce(y * 0.5f, {"x"});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 2.0) << "20,000 ops traced in " << seconds << " s";
  std::printf("20,000 ops of one manual region traced in %.3f s\n", seconds);
  // The region still knows its axes at its far end: a collective over "x" is accepted.
  const Tensor out = disable_manual_sharding(all_reduce(y, {"x"}), mesh, {"x"}, {8});
  (void)out;
}

}  // namespace
}  // namespace vkspmd::testing
