// One process of mesh_world_test: joins the GlooWorld the environment describes, opens its own
// devices (--devices K, the world's local ranks), runs its part of a per-device program with
// collectives (the testdata program given, arguments RandomArguments(module, 100 + d) for
// device d, as the test makes them) and writes each local device's result to OUT_DIR/devD.npy.
// Exit codes: 0 done, 2 bad usage, 3 failure (on stderr), 4 validation messages.
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/str_cat.h"
#include "src/collectives/gloo_world.h"
#include "src/exec/mesh_executable.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "src/runtime/device_set.h"
#include "tests/exec/random_module.h"

namespace vkspmd::testing {
namespace {

absl::Status Run(const std::string& path, const std::string& out, int local_devices) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text.str());
  if (!module.ok()) return module.status();
  absl::StatusOr<std::shared_ptr<collectives::GlooWorld>> world =
      collectives::GlooWorldFromEnvironment(local_devices);
  if (!world.ok()) return world.status();
  absl::StatusOr<runtime::RuntimeConfig> config = runtime::RuntimeConfig::FromEnvironment();
  if (!config.ok()) return config.status();
  config->mesh_device_count = local_devices;
  absl::StatusOr<std::unique_ptr<runtime::DeviceSet>> set = runtime::DeviceSet::Create(*config);
  if (!set.ok()) return set.status();
  const int n = (*world)->size();
  std::vector<runtime::MeshDevice*> devices(n, nullptr);
  std::vector<std::vector<ir::Literal>> arguments;
  for (int d = 0; d < n; ++d) arguments.push_back(RandomArguments(**module, 100 + d));
  const std::vector<int> local = (*world)->local_ranks();
  for (size_t k = 0; k < local.size(); ++k) devices[local[k]] = &(*set)->device(k);
  {
    absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
        exec::MeshExecutable::Compile(**module, devices, false, *world);
    if (!mesh.ok()) return mesh.status();
    absl::StatusOr<std::vector<ir::Literal>> results = (*mesh)->Run(arguments);
    if (!results.ok()) return results.status();
    for (int d : local) {
      absl::Status written = io::WriteNpyFile(absl::StrCat(out, "/dev", d, ".npy"), (*results)[d]);
      if (!written.ok()) return written;
    }
  }
  (*set)->CloseDevices();
  if ((*set)->validation_messages() != nullptr && (*set)->validation_messages()->count() > 0) {
    return absl::InternalError(
        absl::StrCat((*set)->validation_messages()->count(), " validation message(s)"));
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace vkspmd::testing

int main(int argc, char** argv) {
  if (argc != 5 || std::string(argv[3]) != "--devices") {
    std::fprintf(stderr, "usage: mesh_world_child PROGRAM.hlo OUT_DIR --devices K\n");
    return 2;
  }
  absl::Status status = vkspmd::testing::Run(argv[1], argv[2], std::stoi(argv[4]));
  if (!status.ok()) {
    std::fprintf(stderr, "error: %s\n", status.ToString().c_str());
    return absl::IsInternal(status) ? 4 : 3;
  }
  return 0;
}
