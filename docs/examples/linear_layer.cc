// The RFC's linear-layer example: an 8x32 input on a 4x2 mesh, data parallel (batch over mesh
// axis 0), the weight model parallel (its output features over mesh axis 1), the output
// replicated. Checks the result against the same computation on one device.
#include <vkspmd/vkspmd.h>

#include <cmath>
#include <iostream>

int main() {
  try {
    vkspmd::manual_seed(1);
    vkspmd::Mesh mesh({4, 2}, {}, {"data", "model"});
    vkspmd::Tensor input = vkspmd::randn({8, 32});
    vkspmd::Tensor weight = vkspmd::randn({16, 32});  // Linear(32, 16): [out, in].
    vkspmd::Tensor bias = vkspmd::randn({16});
    // The single-device result first, from the same values.
    const std::vector<float> expected =
        (vkspmd::matmul(input, weight.t()) + bias).to_vector<float>();

    vkspmd::mark_sharding(input, mesh, {"data", vkspmd::None});
    vkspmd::mark_sharding(weight, mesh, {"model", vkspmd::None});
    vkspmd::Tensor output = vkspmd::matmul(input, weight.t()) + bias;
    auto replicated = vkspmd::mark_sharding(output, mesh, {vkspmd::None, vkspmd::None});
    std::cout << "output sharding before running (propagated): " << vkspmd::sharding_spec(output)
              << "\n";
    vkspmd::mark_step();
    std::cout << "output " << vkspmd::sharding_type_name(replicated.sharding_type()) << ", "
              << replicated.local_shards().size() << " shards\n";
    const std::vector<float> actual = output.to_vector<float>();
    for (size_t i = 0; i < expected.size(); ++i) {
      if (std::fabs(actual[i] - expected[i]) > 1e-4f * std::max(1.0f, std::fabs(expected[i]))) {
        std::cerr << "element " << i << ": " << actual[i] << " vs " << expected[i] << "\n";
        return 1;
      }
    }
    std::cout << vkspmd::metrics_report();
    return 0;
  } catch (const vkspmd::Error& error) {
    std::cerr << "linear_layer: " << error.what() << "\n";
    return 1;
  }
}
