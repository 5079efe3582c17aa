// One process of the hybrid-mesh test (hybrid_mesh.sh): `hybrid` joins the job, builds
// hybrid_device_mesh({2}, {"dp", "tp"}) (dp over the processes, tp over each one's 2 devices);
// `flat` builds the same [2, 2] mesh over 4 devices of one process. Both then print, as hex
// floats: DTensors distributed and redistributed between placement pairs (full values, and the
// collectives each redistribute runs), and an MLP parallelized dp over the processes + tp inside
// trained 3 SGD steps (losses, final parameters). The script compares the two runs line by line.
#include <cstdio>
#include <string>
#include <vector>

#include "vkspmd/dtensor_parallel.h"
#include "vkspmd/vkspmd.h"

namespace {

using namespace vkspmd;  // NOLINT: a test program.

void PrintValues(const std::string& what, const Tensor& t) {
  std::printf("%s:", what.c_str());
  for (float value : t.to_vector<float>()) std::printf(" %a", value);
  std::printf("\n");
}

int Run(bool hybrid) {
  if (hybrid) distributed::initialize();
  const DeviceMesh mesh = hybrid ? hybrid_device_mesh({2}, {"dp", "tp"})
                                 : DeviceMesh({0, 1, 2, 3}, {2, 2}, {"dp", "tp"});
  // Row-major ids: the outer (dp) axis must step over the processes' blocks of devices.
  std::printf("mesh %s\n", mesh.to_string().c_str());
  std::vector<float> values(6 * 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.25f * static_cast<float>(i) - 2.0f;
  const Tensor global = tensor(std::span<const float>(values), {6, 4});
  const std::vector<std::pair<Placements, Placements>> pairs = {
      {{Shard{0}, Shard{1}}, {Replicate{}, Replicate{}}},  // All-gathers along both axes.
      {{Replicate{}, Shard{0}}, {Shard{1}, Replicate{}}},  // tp inside, dp across.
      {{Shard{0}, Replicate{}}, {Shard{1}, Replicate{}}},  // All-to-all across processes.
      {{Replicate{}, Shard{0}}, {Replicate{}, Shard{1}}},  // All-to-all inside each process.
      {{Replicate{}, Partial{}}, {Replicate{}, Replicate{}}},
      {{Partial{}, Replicate{}}, {Shard{0}, Replicate{}}},
  };
  for (size_t k = 0; k < pairs.size(); ++k) {
    DTensor d = distribute_tensor(global, mesh, pairs[k].first);
    std::printf("pair %zu runs:", k);
    for (const std::string& c : d.redistribute_collectives(mesh, pairs[k].second)) {
      std::printf(" [%s]", c.c_str());
    }
    std::printf("\n");
    const Tensor full = d.redistribute(pairs[k].second).full_tensor();
    PrintValues("pair " + std::to_string(k) + " full", full);
    if (full.to_vector<float>() != values) {  // Every pair keeps the global value exactly.
      std::fprintf(stderr, "pair %zu: the redistributed value differs from the global one\n", k);
      return 1;
    }
  }

  manual_seed(11);
  nn::MlpRegressor model(6, 8, 3);
  parallelize_module(model, mesh, tensor_parallel_plan(model), "tp", "dp");
  std::vector<Tensor> parameters = model.parameters();
  optim::SGD optimizer(parameters, 0.1);
  for (int step = 0; step < 3; ++step) {
    manual_seed(200 + step);
    Tensor loss = model.loss(randn({4, 6}), randn({4, 3}));
    optimizer.step(grad(loss, parameters));
    mark_step();
    std::printf("step %d loss %a\n", step, loss.item());
  }
  for (const auto& [name, parameter] : model.named_parameters()) PrintValues(name, parameter);
  return 0;
}

// `unequal` (hybrid_mesh_unequal.sh: process 0 drives 3 devices, process 1 one): a hybrid mesh
// cannot be rectangular, so hybrid_device_mesh must refuse, naming each process's count (the
// message is printed); init_device_mesh({2, 2}) needs only the job's 4 devices, and a DTensor
// gathered over it keeps its value.
int RunUnequal() {
  distributed::initialize();
  try {
    const DeviceMesh mesh = hybrid_device_mesh({2}, {"dp", "tp"});
    std::printf("hybrid mesh built: %s\n", mesh.to_string().c_str());
    return 1;
  } catch (const Error& error) {
    std::printf("hybrid error: %s\n", error.what());
  }
  const DeviceMesh mesh = init_device_mesh({2, 2}, {"dp", "tp"});
  std::printf("mesh %s\n", mesh.to_string().c_str());
  std::vector<float> values(6 * 4);
  for (size_t i = 0; i < values.size(); ++i) values[i] = 0.5f * static_cast<float>(i) - 3.0f;
  const Tensor global = tensor(std::span<const float>(values), {6, 4});
  const DTensor d = distribute_tensor(global, mesh, {Shard{0}, Shard{1}});
  if (d.redistribute({Replicate{}, Replicate{}}).full_tensor().to_vector<float>() != values) {
    std::fprintf(stderr, "the gathered value differs from the global one\n");
    return 1;
  }
  std::printf("init_device_mesh gather ok\n");
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc == 2 ? argv[1] : "";
  if (mode != "hybrid" && mode != "flat" && mode != "unequal") {
    std::fprintf(stderr, "usage: %s hybrid|flat|unequal\n", argv[0]);
    return 2;
  }
  try {
    if (mode == "unequal") return RunUnequal();
    return Run(mode == "hybrid");
  } catch (const vkspmd::Error& error) {
    std::fprintf(stderr, "error: %s\n", error.what());
    return 1;
  }
}
