// A program that leaves main right after mark_step, while its graph is still compiling and
// running on the lazy runtime's worker (with the validation layer on in tests). It must exit 0
// with no validation message and no crash: the runtime's exit guard lets the graph finish before
// the drivers' and the layer's statics are destroyed. Run many times by ctest.
#include "vkspmd/vkspmd.h"

int main() {
  vkspmd::Mesh mesh({2});
  vkspmd::manual_seed(3);
  vkspmd::Tensor x = vkspmd::randn({64, 96});
  vkspmd::Tensor w = vkspmd::randn({96, 96});
  vkspmd::mark_sharding(x, mesh, {0, vkspmd::None});
  vkspmd::Tensor y = x;
  for (int layer = 0; layer < 6; ++layer) y = vkspmd::tanh(vkspmd::matmul(y, w) * 0.1).softmax(1);
  vkspmd::Tensor total = y.sum();
  vkspmd::mark_step();
  return 0;  // Without waiting for `total`.
}
