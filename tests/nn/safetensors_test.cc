// Module::save_safetensors / load_safetensors: a model saved under one strategy loads bitwise into
// another (and into no strategy) keeping every parameter's identity and sharding; numpy reads the
// file as save_npy's arrays; a missing name, a wrong shape or type and (strict) extra names are
// errors naming the parameter and the file, and leave the model unchanged.
#include "src/io/safetensors.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>

#include "fmt/format.h"
#include "tests/lazy/lazy_test_util.h"
#include "tests/nn/reference.h"
#include "tests/support/python_numpy.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

namespace fs = std::filesystem;

nn::TransformerConfig Config() {
  return nn::TransformerConfig{.vocab = 13, .d_model = 8, .heads = 2, .layers = 1, .max_seq = 6};
}

class SafetensorsModuleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    directory_ = fmt::format("{}/nn_safetensors_{}_{}", ::testing::TempDir(), ::getpid(),
                             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(directory_);
    fs::create_directories(directory_);
  }
  void TearDown() override { fs::remove_all(directory_); }

  std::string Path(const std::string& name) const { return directory_ + "/" + name; }

  std::string directory_;
};

std::map<std::string, Values> ValuesOf(const nn::Module& module) {
  std::map<std::string, Values> values;
  for (const auto& [name, tensor] : module.named_parameters()) {
    values[name] = tensor.to_vector<float>();
  }
  return values;
}

std::map<std::string, std::string> ShardingsOf(const nn::Module& module) {
  std::map<std::string, std::string> shardings;
  for (const auto& [name, tensor] : module.named_parameters()) {
    shardings[name] = sharding_spec(tensor);
  }
  return shardings;
}

TEST_F(SafetensorsModuleTest, LoadsIntoAnotherStrategyBitwise) {
  const Mesh tp_mesh({2}, {}, {"tp"}), fsdp_mesh({2}, {}, {"fsdp"});
  manual_seed(5);
  nn::TransformerLM saved(Config());
  nn::apply_strategy(saved, tp_mesh, "tp");
  const std::string path = Path("lm.safetensors");
  saved.save_safetensors(path);
  const std::map<std::string, Values> expected = ValuesOf(saved);

  // The file holds every parameter by name, in order, as f32.
  absl::StatusOr<io::SafetensorsIndex> index = io::ReadSafetensorsIndex(path);
  ASSERT_TRUE(index.ok()) << index.status();
  const auto parameters = saved.named_parameters();
  ASSERT_EQ(index->tensors.size(), parameters.size());
  for (size_t i = 0; i < parameters.size(); ++i) {
    EXPECT_EQ(index->tensors[i].name, parameters[i].first);
    EXPECT_EQ(index->tensors[i].shape, parameters[i].second.shape());
    EXPECT_EQ(index->tensors[i].dtype, ir::DType::kF32);
  }
  EXPECT_EQ(index->metadata.at("format"), "pt");

  manual_seed(6);
  nn::TransformerLM loaded(Config());
  nn::apply_strategy(loaded, fsdp_mesh, "fsdp");
  const std::map<std::string, std::string> shardings = ShardingsOf(loaded);
  Tensor handle = loaded.named_parameters()[0].second;
  EXPECT_NE(ValuesOf(loaded), expected);
  loaded.load_safetensors(path);
  EXPECT_EQ(ValuesOf(loaded), expected);
  EXPECT_EQ(ShardingsOf(loaded), shardings) << "a loaded parameter keeps its sharding";
  EXPECT_EQ(handle.to_vector<float>(), expected.at(parameters[0].first))
      << "a handle taken before the load sees the loaded value";
  const std::vector<int32_t> tokens = {1, 5, 12, 0, 3, 7, 7, 2};
  const Values saved_logits = saved(tensor(tokens, {2, 4})).to_vector<float>();
  EXPECT_EQ(CompareValues(loaded(tensor(tokens, {2, 4})).to_vector<float>(), saved_logits, 1e-5),
            "");

  manual_seed(7);
  nn::TransformerLM unsharded(Config());
  unsharded.load_safetensors(path);
  EXPECT_EQ(ValuesOf(unsharded), expected);
}

// Debian's python3 with numpy runs tests/io/safetensors_check.py on the file and save_npy's
// directory of the same model.
TEST_F(SafetensorsModuleTest, NumpyFindsTheSameValuesAsSaveNpy) {
  if (!PythonHasNumpy(VKSPMD_PYTHON)) GTEST_SKIP() << VKSPMD_PYTHON << " has no numpy";
  const Mesh mesh({2}, {}, {"fsdp"});
  manual_seed(8);
  nn::MlpRegressor model(3, 5, 2);
  nn::apply_strategy(model, mesh, "fsdp");
  model.save_safetensors(Path("mlp.safetensors"));
  model.save_npy(Path("npy"));
  const std::string log = Path("check.log");
  const std::string command =
      fmt::format("{} {} {} {} > {} 2>&1", VKSPMD_PYTHON, VKSPMD_SAFETENSORS_CHECK,
                  Path("mlp.safetensors"), Path("npy"), log);
  const int status = std::system(command.c_str());
  std::ifstream output(log);
  EXPECT_EQ(status, 0) << command << "\n"
                       << std::string(std::istreambuf_iterator<char>(output), {});
}

// The file of `module` with `change` applied to its list of tensors first.
void WriteChanged(
    const nn::Module& module, const std::string& path,
    const std::function<void(std::vector<std::pair<std::string, ir::Literal>>&)>& change) {
  std::vector<std::pair<std::string, ir::Literal>> tensors;
  for (const auto& [name, tensor] : module.named_parameters()) {
    tensors.emplace_back(name, ir::Literal::Create<float>(ir::DType::kF32, tensor.shape(),
                                                          tensor.to_vector<float>()));
  }
  change(tensors);
  ASSERT_TRUE(io::WriteSafetensorsFile(path, tensors).ok());
}

TEST_F(SafetensorsModuleTest, ErrorsNameTheParameterAndTheFile) {
  const Mesh mesh({1, 2}, {}, {"dp", "tp"});
  manual_seed(9);
  nn::MlpRegressor source(3, 5, 2);
  manual_seed(10);
  nn::MlpRegressor model(3, 5, 2);
  nn::apply_strategy(model, mesh, "dp+tp");
  const std::map<std::string, Values> before = ValuesOf(model);
  auto load_error = [&](const std::string& path, bool strict = true) {
    return ThrownMessage([&] { model.load_safetensors(path, strict); });
  };
  using Tensors = std::vector<std::pair<std::string, ir::Literal>>;

  const std::string missing = Path("missing.safetensors");
  WriteChanged(source, missing, [](Tensors& tensors) { tensors.pop_back(); });
  EXPECT_EQ(load_error(missing),
            "load_safetensors: " + missing + " has no tensor for parameter mlp.fc2.bias");

  const std::string shape = Path("shape.safetensors");
  WriteChanged(source, shape, [](Tensors& tensors) {
    tensors[0].second = ir::Literal(ir::Shape(ir::DType::kF32, {3, 5}));
  });
  EXPECT_EQ(load_error(shape), "load_safetensors: " + shape +
                                   " holds mlp.fc1.weight as F32[3,5] but the parameter is "
                                   "float32[5,3] (shape and type must match)");

  const std::string type = Path("type.safetensors");
  WriteChanged(source, type, [](Tensors& tensors) {
    tensors[1].second = ir::Literal(ir::Shape(ir::DType::kS32, {5}));
  });
  EXPECT_EQ(load_error(type), "load_safetensors: " + type +
                                  " holds mlp.fc1.bias as I32[5] but the parameter is "
                                  "float32[5] (shape and type must match)");

  const std::string extra = Path("extra.safetensors");
  WriteChanged(source, extra, [](Tensors& tensors) {
    for (int i = 0; i < 7; ++i) tensors.emplace_back(fmt::format("extra.{}", i), ir::Literal());
  });
  EXPECT_EQ(load_error(extra),
            "load_safetensors: " + extra +
                " holds 7 tensors that are not parameters of the module: \"extra.0\", \"extra.1\", "
                "\"extra.2\", \"extra.3\", \"extra.4\" and 2 more (strict=false ignores them)");
  EXPECT_EQ(ValuesOf(model), before) << "a failed load changes nothing";

  const std::string bad = Path("bad.safetensors");
  std::ofstream(bad) << "not a safetensors file";
  EXPECT_EQ(load_error(bad).rfind("load_safetensors: " + bad + ": ", 0), 0u) << load_error(bad);
  EXPECT_EQ(load_error(Path("none.safetensors")).rfind("load_safetensors: cannot open ", 0), 0u);
  EXPECT_EQ(ThrownMessage([&] {
              model.save_safetensors(Path("no/such/dir/x.safetensors"));
            }).rfind("save_safetensors: cannot create ", 0),
            0u);

  EXPECT_EQ(load_error(extra, /*strict=*/false), "no error");
  EXPECT_EQ(ValuesOf(model), ValuesOf(source));
}

}  // namespace
}  // namespace vkspmd::testing
