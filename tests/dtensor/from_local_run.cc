// One process of the multi-process from_local test (from_local.sh): joins the job (2 processes x
// 2 lavapipe devices), builds hybrid_device_mesh({2}, {"dp", "tp"}) and makes DTensors from this
// process's own devices' locals only (PyTorch's DTensor.from_local: each rank its own shard).
// Device d's local is 2x3 with element (i, j) = 100·d + 10·i + j (in the Replicate case 100·tp +
// 10·i + j, equal across the replicated axis). Prints each DTensor's full value and this
// process's to_local(), and the error of a call with a local per mesh device instead; the script
// checks them against NumPy.
#include <cstdio>
#include <string>
#include <vector>

#include "vkspmd/vkspmd.h"

namespace {

using namespace vkspmd;  // NOLINT: a test program.

Tensor Local(int64_t base) {
  std::vector<float> values;
  for (int i = 0; i < 2; ++i) {
    for (int j = 0; j < 3; ++j) values.push_back(static_cast<float>(base + 10 * i + j));
  }
  return tensor(values, {2, 3});
}

void Print(const std::string& what, const Tensor& t) {
  std::printf("%s:", what.c_str());
  for (float value : t.to_vector<float>()) std::printf(" %g", value);
  std::printf("\n");
}

}  // namespace

int main() {
  distributed::initialize();
  const DeviceMesh mesh = hybrid_device_mesh({2}, {"dp", "tp"});
  const std::vector<int> own = distributed::addressable_devices();
  std::printf("mesh %s, devices %d %d\n", mesh.to_string().c_str(), own.at(0), own.at(1));
  const std::vector<std::pair<std::string, Placements>> cases = {
      {"shard0_shard1", {Shard{0}, Shard{1}}},
      {"partial_shard0", {Partial{}, Shard{0}}},
      {"replicate_shard1", {Replicate{}, Shard{1}}},
      {"shard1_partialmax", {Shard{1}, Partial{ReduceOp::kMax}}},
  };
  for (const auto& [name, placements] : cases) {
    std::vector<Tensor> locals;
    for (int d : own) locals.push_back(Local(name == "replicate_shard1" ? 100 * (d % 2) : 100 * d));
    const DTensor dt = from_local(locals, mesh, placements);
    Print(name + " full", dt.full_tensor());
    const std::vector<Tensor> back = dt.to_local();
    for (size_t k = 0; k < back.size(); ++k) {
      if (back[k].defined())
        Print(name + " local " + std::to_string(mesh.device_ids()[k]), back[k]);
    }
  }
  // A local per mesh device (the one-process form) is an error naming the counts.
  try {
    std::vector<Tensor> every;
    for (int d = 0; d < 4; ++d) every.push_back(Local(100 * d));
    from_local(every, mesh, {Shard{0}, Shard{1}});
    std::printf("count mismatch: no error\n");
  } catch (const Error& error) {
    std::printf("count mismatch: %s\n", error.what());
  }
  return 0;
}
