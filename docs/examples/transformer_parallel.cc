// docs/nn.md's example: a small TransformerLM on a 2x2 mesh, data parallel over "dp" and Megatron
// tensor parallel over "tp", built against the public library only. Checks the sharded loss
// against the same model (same seed) on one device and prints how the head's weight is split.
#include <vkspmd/vkspmd.h>

#include <cmath>
#include <iostream>

namespace {

const vkspmd::nn::TransformerConfig kConfig{
    .vocab = 17, .d_model = 16, .heads = 4, .layers = 2, .max_seq = 8};

// The loss of the model built from seed 0 on a batch of 4 windows of 8 tokens.
double Loss(const vkspmd::Mesh* mesh) {
  vkspmd::manual_seed(0);
  vkspmd::nn::TransformerLM model(kConfig);
  if (mesh != nullptr) vkspmd::nn::data_tensor_parallel(model, *mesh);
  vkspmd::sync();  // The parameters, sharded, on the mesh.
  std::vector<int32_t> tokens, targets;
  for (int32_t i = 0; i < 32; ++i) {
    tokens.push_back((5 * i + 3) % 17);
    targets.push_back((5 * i + 8) % 17);
  }
  vkspmd::Tensor loss = model.loss(vkspmd::tensor(tokens, {4, 8}), vkspmd::tensor(targets, {4, 8}));
  if (mesh != nullptr) {
    for (const auto& [name, parameter] : model.named_parameters()) {
      if (name == "head.weight")
        std::cout << name << " " << vkspmd::sharding_spec(parameter) << "\n";
    }
  }
  return loss.item();
}

}  // namespace

int main() {
  try {
    vkspmd::Mesh mesh({2, 2}, {}, {"dp", "tp"});  // First, so four devices open.
    const double expected = Loss(nullptr);
    const double actual = Loss(&mesh);
    std::cout << "loss on one device " << expected << ", on dp x tp 2x2 " << actual << "\n";
    if (std::fabs(actual - expected) > 1e-4 * std::fabs(expected)) return 1;
    std::cout << "the sharded loss matches one device's\n";
    return 0;
  } catch (const vkspmd::Error& error) {
    std::cerr << "transformer_parallel: " << error.what() << "\n";
    return 1;
  }
}
