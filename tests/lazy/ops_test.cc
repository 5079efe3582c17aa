// Every op of the Tensor API on one device and on a 2x2 mesh with several input shardings
// equals PyTorch (tests/lazy/torch_ops.py, run by Debian's /usr/bin/python3 on the inputs as the
// devices hold them), and so does the reference evaluator running the traced, unpartitioned graph
// (odd and prime sizes, so shards are uneven and padded). All ops of a configuration form one
// graph: one compile and one PyTorch process each. PyTorch missing is a failure, not a skip.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>

#include "fmt/format.h"
#include "src/api/api_support.h"
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
      {"index_int_slice", index(a, {int64_t{-2}, Slice{1, std::nullopt, 3}})},
      {"index_ellipsis_newaxis", index(in.a3, {Ellipsis, NewAxis, Slice{-4, 100}})},
      {"index_int_middle", index(in.a3, {Slice{}, int64_t{3}})},
      {"index_tensor", index(a, {Slice{}, in.indices})},
      {"index_tensor_3d", index(in.a3, {Ellipsis, in.indices})},
      {"index_mask", index(a, {Slice{}, in.condition})},
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

namespace fs = std::filesystem;

// f32 on the device (transcendentals within a few ulp, other summation orders) against PyTorch's
// float64 value rounded to f32.
constexpr double kRelative = 1e-5;
constexpr double kAbsolute = 1e-6;

// A directory of this process for one test case, removed afterwards.
class TemporaryDirectory {
 public:
  TemporaryDirectory() {
    const ::testing::TestInfo* test = ::testing::UnitTest::GetInstance()->current_test_info();
    path_ = fs::path(::testing::TempDir()) /
            fmt::format("vkspmd_lazy_ops_{}_{}", test->name(), ::getpid());
    fs::remove_all(path_);
    fs::create_directories(path_);
  }
  ~TemporaryDirectory() { fs::remove_all(path_); }
  const fs::path& path() const { return path_; }

 private:
  fs::path path_;
};

// The inputs by the names tests/lazy/torch_ops.py reads.
std::vector<std::pair<std::string, Tensor>> NamedInputs(const Inputs& in) {
  return {{"a", in.a},
          {"b", in.b},
          {"c", in.c},
          {"v", in.v},
          {"a3", in.a3},
          {"w3", in.w3},
          {"indices", in.indices},
          {"condition", in.condition}};
}

// The largest |actual - expected| as a fraction of the tolerance (floats only; 0 for others).
double ToleranceUsed(const HostTensor& actual, const HostTensor& expected) {
  double worst = 0;
  if (actual.dtype != DType::kFloat32 || actual.shape != expected.shape) return worst;
  for (int64_t i = 0; i < actual.numel(); ++i) {
    const double a = actual.at<double>(i), b = expected.at<double>(i);
    if (a != b) worst = std::max(worst, std::fabs(a - b) / (kAbsolute + kRelative * std::fabs(b)));
  }
  return worst;
}

// Writes the inputs and the op names into `directory` and runs tests/lazy/torch_ops.py there;
// "" on success, else the command and its output.
std::string RunTorch(const fs::path& directory, const Inputs& in,
                     const std::vector<std::pair<std::string, Tensor>>& ops) {
  for (const auto& [name, value] : NamedInputs(in)) {
    value.to_npy((directory / (name + ".npy")).string());
  }
  {
    std::ofstream names(directory / "ops.txt");
    for (const auto& [name, t] : ops) names << name << "\n";
  }
  const fs::path log = directory / "torch.log";
  const std::string command = fmt::format("{} {} {} > {} 2>&1", VKSPMD_TORCH_PYTHON,
                                          VKSPMD_TORCH_OPS, directory.string(), log.string());
  if (std::system(command.c_str()) == 0) return "";
  std::ifstream log_stream(log);
  return command + "\n" + std::string(std::istreambuf_iterator<char>(log_stream), {}) +
         "(PyTorch is part of the test set-up: Debian's python3-torch and python3-numpy, see "
         "tools/setup.sh)";
}

// Builds every op, takes the reference evaluator's values, syncs once, asks PyTorch and compares
// both the devices' and the evaluator's values with PyTorch's.
void CheckAllOps(const std::function<void(Inputs&)>& shard) {
  Inputs in = MakeInputs();
  shard(in);
  std::vector<std::pair<std::string, Tensor>> ops = AllOps(in);
  std::vector<ir::Literal> references;
  for (const auto& [name, t] : ops) references.push_back(ReferenceValue(t));
  sync();
  TemporaryDirectory directory;
  const std::string torch_error = RunTorch(directory.path(), in, ops);
  ASSERT_TRUE(torch_error.empty()) << torch_error;
  std::pair<double, std::string> worst = {0, ""};
  for (size_t k = 0; k < ops.size(); ++k) {
    const std::string& name = ops[k].first;
    const HostTensor expected = from_npy((directory.path() / (name + ".npy")).string()).to_host();
    const HostTensor actual = ops[k].second.to_host();
    EXPECT_EQ(CompareWithExpected(actual, expected, kRelative, kAbsolute), "")
        << name << " on the devices against PyTorch";
    worst = std::max(worst, {ToleranceUsed(actual, expected), name});
    EXPECT_EQ(
        CompareWithExpected(lazy::ToHostTensor(references[k]), expected, kRelative, kAbsolute), "")
        << name << " in the reference evaluator against PyTorch";
  }
  fmt::print(
      "{} ops against PyTorch; the largest device difference, {}, is {:.2f} of the "
      "tolerance\n",
      ops.size(), worst.second, worst.first);
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
