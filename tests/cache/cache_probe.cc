// A small program for the compile-cache tests (cache_processes_test.py): computes softmax(tanh or
// sigmoid of x @ w) through the public API, prints a digest of the exact result bytes and the
// metrics report. Flags: --sigmoid (another kernel source), --mesh (x's rows over 2 devices),
// --init PATH [--readonly] (the API rather than VKSPMD_CACHE_DIR), --minus (then, in the same
// process, softmax(a - h) and softmax(h - a) for the activation a: programs that differ only in
// the operand order of a subtraction, their digests printed as "minus" and "swapped").
#include <vkspmd/vkspmd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <iostream>
#include <string>
#include <vector>

namespace {

// FNV-1a over the bytes of `tensor`'s values: bitwise identity.
uint64_t Digest(const vkspmd::Tensor& tensor) {
  const std::vector<float> values = tensor.to_vector<float>();
  uint64_t digest = 1469598103934665603u;
  for (float value : values) {
    uint32_t bits = 0;
    std::memcpy(&bits, &value, sizeof(bits));
    for (int byte = 0; byte < 4; ++byte) {
      digest = (digest ^ ((bits >> (8 * byte)) & 0xff)) * 1099511628211u;
    }
  }
  return digest;
}

}  // namespace

int main(int argc, char** argv) {
  bool sigmoid = false;
  bool readonly = false;
  bool mesh = false;
  bool minus = false;
  const char* init = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--sigmoid") == 0) sigmoid = true;
    if (std::strcmp(argv[i], "--readonly") == 0) readonly = true;
    if (std::strcmp(argv[i], "--mesh") == 0) mesh = true;
    if (std::strcmp(argv[i], "--minus") == 0) minus = true;
    if (std::strcmp(argv[i], "--init") == 0 && i + 1 < argc) init = argv[++i];
  }
  try {
    if (init != nullptr) vkspmd::initialize_cache(init, readonly);
    vkspmd::manual_seed(7);
    vkspmd::Tensor x = vkspmd::randn({16, 32});
    vkspmd::Tensor w = vkspmd::randn({32, 24});
    if (mesh) vkspmd::mark_sharding(x, vkspmd::Mesh({2}, {}, {"rows"}), {"rows", vkspmd::None});
    vkspmd::Tensor h = vkspmd::matmul(x, w);
    vkspmd::Tensor a = sigmoid ? vkspmd::sigmoid(h) : vkspmd::tanh(h);
    vkspmd::Tensor y = vkspmd::softmax(a, 1);
    std::printf("cache directory: %s\nresult %016llx\n", vkspmd::cache_directory().c_str(),
                static_cast<unsigned long long>(Digest(y)));
    if (minus) {
      const uint64_t minus_digest = Digest(vkspmd::softmax(a - h, 1));
      std::printf("minus %016llx\nswapped %016llx\n", static_cast<unsigned long long>(minus_digest),
                  static_cast<unsigned long long>(Digest(vkspmd::softmax(h - a, 1))));
    }
    std::cout << vkspmd::metrics_report() << std::flush;
    return 0;
  } catch (const vkspmd::Error& error) {
    std::cerr << "cache_probe: " << error.what() << "\n";
    return 1;
  }
}
