// Bad input to training through the public API: a batch the data axis does not divide (an error
// naming the sizes; batches are not padded), an unknown strategy, and a mesh needing more devices
// than VKSPMD_DEVICES allows or than can be created. Each error is a vkspmd::Error whose message
// says what was wrong, and a training step after it still works.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <optional>

#include "tests/lazy/lazy_test_util.h"
#include "tests/train/training.h"

namespace vkspmd::testing {
namespace {

using ::testing::HasSubstr;

// Sets an environment variable for the scope of the object, restoring it afterwards.
class ScopedEnvironment {
 public:
  ScopedEnvironment(const char* name, const char* value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value, /*overwrite=*/1);
  }
  ~ScopedEnvironment() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }

 private:
  const char* name_;
  std::optional<std::string> old_;
};

TEST(BadTrainingInputTest, BatchNotDivisibleByTheDataAxisNamesTheSizes) {
  const Mesh mesh = nn::strategy_mesh("fsdp", {4});
  manual_seed(kModelSeed);
  nn::MlpRegressor model(kFeatures, kHidden, kOutputs);
  nn::apply_strategy(model, mesh, "fsdp");
  const std::vector<Tensor> parameters = model.parameters();
  optim::AdamW optimizer(parameters, 1e-2);
  mark_step();
  const std::string message = ThrownMessage([&] {
    Tensor x = model.shard_input(tensor(std::vector<float>(6 * kFeatures, 0.5f), {6, kFeatures}));
    Tensor y = model.shard_input(tensor(std::vector<float>(6 * kOutputs, 1.0f), {6, kOutputs}));
    optimizer.step(grad(model.loss(x, y), parameters));
  });
  EXPECT_THAT(message, HasSubstr("[6,8]"));
  EXPECT_THAT(message, HasSubstr("not divisible by the 4 devices"));
  EXPECT_THAT(message, HasSubstr("\"fsdp\""));
  // The model still trains on a batch that divides.
  Tensor x = model.shard_input(tensor(std::vector<float>(8 * kFeatures, 0.5f), {8, kFeatures}));
  Tensor y = model.shard_input(tensor(std::vector<float>(8 * kOutputs, 1.0f), {8, kOutputs}));
  Tensor loss = model.loss(x, y);
  optimizer.step(grad(loss, parameters));
  mark_step();
  EXPECT_TRUE(std::isfinite(loss.item()));
}

TEST(BadTrainingInputTest, UnknownStrategyListsTheKnownOnes) {
  const std::string mesh_message = ThrownMessage([] { nn::strategy_mesh("pipeline", {2}); });
  EXPECT_THAT(mesh_message, HasSubstr("unknown strategy \"pipeline\""));
  EXPECT_THAT(mesh_message, HasSubstr("dp, tp, dp+tp or fsdp"));
  manual_seed(kModelSeed);
  nn::TransformerLM model(TransformerConfigForTests());
  const std::string apply_message =
      ThrownMessage([&] { nn::apply_strategy(model, nn::strategy_mesh("dp", {2}), "DP"); });
  EXPECT_THAT(apply_message, HasSubstr("unknown strategy \"DP\""));
  EXPECT_EQ(model.parallel_plan(), nullptr);
}

TEST(BadTrainingInputTest, MeshNeedingMoreDevicesThanAllowed) {
  {
    ScopedEnvironment devices("VKSPMD_DEVICES", "2");
    const std::string message = ThrownMessage([] { nn::strategy_mesh("dp+tp", {2, 2}); });
    EXPECT_THAT(message, HasSubstr("needs 4 mesh devices"));
    EXPECT_THAT(message, HasSubstr("VKSPMD_DEVICES=2"));
    EXPECT_NO_THROW(nn::strategy_mesh("dp", {2}));
  }
  const std::string message = ThrownMessage([] { nn::strategy_mesh("fsdp", {16, 32}); });
  EXPECT_THAT(message, HasSubstr("needs 512 mesh devices"));
  EXPECT_THAT(message, HasSubstr("at most 256 can be created"));
}

}  // namespace
}  // namespace vkspmd::testing
