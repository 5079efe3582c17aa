// The XLAShardedTensor RFC's usage example in C++: an 8x4 tensor sharded over a 2x4 mesh behaves
// like the unsharded tensor; printing gathers it; after execution each device holds its shard.
// Only the public API (the installed headers) is used.
#include <vkspmd/vkspmd.h>

#include <iostream>

int main() {
  try {
    vkspmd::manual_seed(0);
    auto m1 = vkspmd::randn({8, 4});
    vkspmd::Mesh mesh({2, 4});  // 8 mesh devices
    auto m1_sharded = vkspmd::mark_sharding(m1, mesh, {0, 1});
    std::cout << "sharding_spec: " << m1_sharded.sharding_spec() << "\n";
    std::cout << "sharding_type: " << vkspmd::sharding_type_name(m1_sharded.sharding_type())
              << "\n";
    auto m2 = m1_sharded + 1;  // An op on the sharded tensor: computed on the 8 devices.
    std::cout << m2 << "\n";
    for (const vkspmd::LocalShard& shard : m1_sharded.local_shards()) {
      std::cout << "device " << shard.device << ": rows [" << shard.indices[0].start << ":"
                << shard.indices[0].stop << "], cols [" << shard.indices[1].start << ":"
                << shard.indices[1].stop << "]\n";
    }
    // The sharded and the unsharded computation agree exactly.
    const std::vector<float> sharded = m2.to_vector<float>();
    const std::vector<float> plain = m1_sharded.global_tensor().to_vector<float>();
    for (size_t i = 0; i < plain.size(); ++i) {
      if (sharded[i] != plain[i] + 1) {
        std::cerr << "element " << i << " differs\n";
        return 1;
      }
    }
    return 0;
  } catch (const vkspmd::Error& error) {
    std::cerr << "rfc_example: " << error.what() << "\n";
    return 1;
  }
}
