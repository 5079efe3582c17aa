// Every op of the Tensor API on one device and on a 2x2 mesh with several input shardings
// equals the reference evaluator running the traced, unpartitioned graph (odd and prime sizes, so
// shards are uneven and padded). All ops of a configuration form one graph: one compile each.
#include <gtest/gtest.h>

#include <functional>

#include "tests/lazy/lazy_test_util.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

struct Inputs {
  Tensor a, b, c, v, a3, w3, indices, condition;
};

Inputs MakeInputs() {
  manual_seed(11);
  Inputs in;
  in.a = randn({5, 7});
  in.b = randn({5, 7});
  in.c = randn({7, 3});
  in.v = randn({7});
  in.a3 = randn({3, 5, 7});
  in.w3 = randn({1, 7, 2});
  in.indices = tensor(std::vector<int32_t>{3, 0, 6, 2, 3});
  in.condition = tensor(std::vector<bool>{true, false, false, true, true, false, true});
  return in;
}

std::vector<std::pair<std::string, Tensor>> AllOps(const Inputs& in) {
  const Tensor& a = in.a;
  const Tensor& b = in.b;
  Tensor positive = abs(a) + 0.5;
  return {
      {"add", a + b},
      {"sub", a - b},
      {"mul", a * b},
      {"div", a / positive},
      {"add_scalar", a + 2.5},
      {"scalar_sub", 2 - a},
      {"mul_scalar", a * 3},
      {"div_scalar", a / 4.0},
      {"neg", -a},
      {"abs", abs(a)},
      {"exp", exp(a)},
      {"log", log(positive)},
      {"sqrt", sqrt(positive)},
      {"rsqrt", rsqrt(positive)},
      {"tanh", tanh(a)},
      {"sigmoid", sigmoid(a)},
      {"relu", relu(a)},
      {"gelu", gelu(a)},
      {"gelu_tanh", gelu(a, "tanh")},
      {"pow_scalar", pow(positive, 1.5)},
      {"pow", pow(positive, b)},
      {"maximum", maximum(a, b)},
      {"minimum", minimum(a, b)},
      {"lt", a < b},
      {"le", a <= b},
      {"gt", a > b},
      {"ge", a >= b},
      {"eq", eq(a, a)},
      {"ne_scalar", ne(a, 0)},
      {"where", where(a > b, a, b)},
      {"where_broadcast", where(in.condition, a, 0.5)},
      {"broadcast_add", a + in.v},
      {"broadcast_column", a * a.sum({1}, true)},
      {"matmul", matmul(a, in.c)},
      {"matmul_batched", matmul(in.a3, in.c)},
      {"matmul_broadcast_batch", matmul(in.a3, in.w3)},
      {"matmul_vector_right", matmul(a, in.v)},
      {"matmul_vector_left", matmul(in.v, in.c)},
      {"transpose", a.transpose(0, 1)},
      {"permute", in.a3.permute({2, 0, 1})},
      {"reshape", a.reshape({7, 5})},
      {"view_flat", a.view({-1})},
      {"unsqueeze_squeeze", a.unsqueeze(1).squeeze(1) + a.unsqueeze(0).squeeze()},
      {"expand", in.v.unsqueeze(0).expand({5, -1})},
      {"slice", slice(a, 1, 1, 6, 2)},
      {"narrow", a.narrow(0, 1, 3)},
      {"cat0", cat({a, b}, 0)},
      {"cat1", cat({a, b.narrow(1, 0, 3)}, 1)},
      {"sum", a.sum()},
      {"sum_keepdim", a.sum({1}, true)},
      {"mean", a.mean({0})},
      {"max", a.max(1)},
      {"min", a.min(0, true)},
      {"amax3", amax(in.a3, {0, 2})},
      {"argmax", a.argmax(1)},
      {"argmax_keepdim", a.argmax(0, true)},
      {"softmax", a.softmax(1)},
      {"log_softmax", a.log_softmax(0)},
      {"layer_norm", layer_norm(a, {7}, in.v, in.v * 0.5)},
      {"one_hot", one_hot(in.indices, 7)},
      {"embedding", embedding(in.indices, in.c)},
      {"cross_entropy", cross_entropy(a, in.indices)},
      {"cross_entropy_none", cross_entropy(a, in.indices, "none")},
      {"arange", arange(0, 5) * 2},
      {"arange_float", arange(0.5, 3.0, 0.5)},
      {"full", full({5, 7}, 1.25) + a},
      {"zeros_ones", zeros({5, 7}) + ones({5, 7}) * a},
      {"int_arithmetic", in.indices * 3 + 1 - in.indices},
      {"int_to_float", in.indices.to(float32) / 2},
      {"bool_sum", (a > 0).sum({1})},
  };
}

// Builds every op, takes the references, syncs once and compares.
void CheckAllOps(const std::function<void(Inputs&)>& shard) {
  Inputs in = MakeInputs();
  shard(in);
  std::vector<std::pair<std::string, Tensor>> ops = AllOps(in);
  std::vector<ir::Literal> references;
  for (const auto& [name, t] : ops) references.push_back(ReferenceValue(t));
  sync();
  for (size_t k = 0; k < ops.size(); ++k) {
    EXPECT_EQ(CompareWithReference(ops[k].second.to_host(), references[k], 2e-5), "")
        << ops[k].first;
  }
}

TEST(OpsTest, OneDevice) {
  CheckAllOps([](Inputs&) {});
}

TEST(OpsTest, MeshRowsAndColumns) {
  Mesh mesh({2, 2});
  CheckAllOps([&](Inputs& in) {
    mark_sharding(in.a, mesh, {0, 1});
    mark_sharding(in.b, mesh, {1, None});
    mark_sharding(in.c, mesh, {None, 0});
    mark_sharding(in.a3, mesh, {None, 0, 1});
  });
}

TEST(OpsTest, MeshBothAxesOnOneDim) {
  Mesh mesh({2, 2}, {}, {"dp", "tp"});
  CheckAllOps([&](Inputs& in) {
    mark_sharding(in.a, mesh, {Axes{"dp", "tp"}, None});
    mark_sharding(in.b, mesh, {None, "tp"});
    mark_sharding(in.v, mesh, {"dp"});
    mark_sharding(in.a3, mesh, {"tp", None, "dp"});
  });
}

TEST(OpsTest, MeshShardedIntermediate) {
  Mesh mesh({2, 2});
  CheckAllOps([&](Inputs& in) {
    in.a = in.a * 1;  // An intermediate: the mark is a constraint, not a reshard.
    mark_sharding(in.a, mesh, {1, 0});
    mark_sharding(in.c, mesh, {0, 1});
  });
}

}  // namespace
}  // namespace vkspmd::testing
