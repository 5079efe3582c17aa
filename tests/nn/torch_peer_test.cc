// The transformer and the MLP regressor against PyTorch: their parameters, inputs, outputs and
// losses go to .npy files, and torch_peer.py (with /usr/bin/python3, whose torch is Debian's)
// loads the same weights into PyTorch twins and compares.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {
namespace {

TEST(TorchPeerTest, TransformerAndRegressorMatchPyTorch) {
  const std::string directory =
      ::testing::TempDir() + "/nn_torch_peer_" + std::to_string(::getpid());
  std::filesystem::remove_all(directory);
  std::filesystem::create_directories(directory);
  auto path = [&](const std::string& name) { return directory + "/" + name + ".npy"; };

  manual_seed(31);
  const nn::TransformerConfig config{
      .vocab = 11, .d_model = 8, .heads = 2, .layers = 2, .max_seq = 7};
  nn::TransformerLM lm(config);
  lm.save_npy(directory + "/transformer");
  std::vector<int32_t> tokens, targets;
  for (int32_t i = 0; i < 3 * 6; ++i) {
    tokens.push_back((4 * i + 1) % 11);
    targets.push_back((4 * i + 5) % 11);
  }
  Tensor token_tensor = tensor(tokens, {3, 6}), target_tensor = tensor(targets, {3, 6});
  token_tensor.to_npy(path("tokens"));
  target_tensor.to_npy(path("targets"));
  lm(token_tensor).to_npy(path("logits"));
  lm.loss(token_tensor, target_tensor).to_npy(path("lm_loss"));

  nn::MlpRegressor regressor(5, 9, 3);
  regressor.save_npy(directory + "/regressor");
  Tensor x = randn({4, 5}), y = randn({4, 3});
  x.to_npy(path("x"));
  y.to_npy(path("y"));
  regressor(x).to_npy(path("prediction"));
  regressor.loss(x, y).to_npy(path("mse_loss"));

  std::ofstream(directory + "/config.json")
      << R"({"transformer": {"vocab": 11, "d_model": 8, "heads": 2, "layers": 2, "max_seq": 7},)"
      << R"( "regressor": {"in_features": 5, "hidden_features": 9, "out_features": 3}})";
  const std::string command = std::string("/usr/bin/python3 ") + VKSPMD_NN_TORCH_PEER + " " +
                              directory + " > " + directory + "/peer.log 2>&1";
  const int status = std::system(command.c_str());
  std::ifstream log(directory + "/peer.log");
  const std::string output((std::istreambuf_iterator<char>(log)), {});
  EXPECT_EQ(status, 0) << output;
  EXPECT_NE(output.find("transformer logits"), std::string::npos) << output;
  std::filesystem::remove_all(directory);
}

}  // namespace
}  // namespace vkspmd::testing
