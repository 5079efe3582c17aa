// Per-device programs with collectives on 2 processes x 2 lavapipe devices (GlooWorld between
// them, mesh_world_child the processes) against the same program on 4 devices of this process:
// every device's result bitwise equal, for each 4-device testdata program (all-reduce,
// all-gather, reduce-scatter, all-to-all and collective-permute over replica groups).
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>

#include "src/exec/mesh_executable.h"
#include "src/io/npy.h"
#include "src/ir/parser.h"
#include "tests/collectives/process_job.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

class MeshWorldTest : public DeviceTest {};

TEST_F(MeshWorldTest, TwoProcessesOfTwoDevicesEqualOneProcessOfFour) {
  int ran = 0;
  for (const char* name : {"all_reduce_groups", "all_gather_iota_groups", "reduce_scatter",
                           "all_to_all", "collective_permute", "partition_id_slice"}) {
    SCOPED_TRACE(name);
    const std::string path = absl::StrCat(VKSPMD_TESTDATA_DIR, "/", name, ".hlo");
    std::ifstream file(path);
    std::stringstream text;
    text << file.rdbuf();
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text.str());
    ASSERT_TRUE(module.ok()) << module.status();
    ASSERT_EQ((*module)->replica_count() * (*module)->partition_count(), 4);

    // One process, four devices: the expected results.
    OpenDevices(4);
    std::vector<std::vector<ir::Literal>> arguments;
    for (int d = 0; d < 4; ++d) arguments.push_back(RandomArguments(**module, 100 + d));
    std::vector<ir::Literal> expected;
    {
      absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> mesh =
          exec::MeshExecutable::Compile(**module, {&device(0), &device(1), &device(2), &device(3)});
      ASSERT_TRUE(mesh.ok()) << mesh.status();
      absl::StatusOr<std::vector<ir::Literal>> results = (*mesh)->Run(arguments);
      ASSERT_TRUE(results.ok()) << results.status();
      expected = std::move(*results);
    }
    TearDown();  // The children open their own devices.

    Job job(VKSPMD_MESH_WORLD_CHILD);
    for (int index = 0; index < 2; ++index) {
      job.Start(job.Variables(index, 2, /*tcp=*/false),
                {path, job.dir().string(), "--devices", "2"});
    }
    std::vector<Outcome> outcomes = job.Wait(std::chrono::seconds(120));
    for (size_t k = 0; k < outcomes.size(); ++k) {
      ASSERT_EQ(outcomes[k].code, 0) << "process " << k << ":\n" << outcomes[k].log;
    }
    for (int d = 0; d < 4; ++d) {
      absl::StatusOr<ir::Literal> got =
          io::ReadNpyFile((job.dir() / absl::StrCat("dev", d, ".npy")).string());
      ASSERT_TRUE(got.ok()) << got.status();
      EXPECT_TRUE(*got == expected[d]) << "device " << d << " differs from one process's";
    }
    ++ran;
  }
  EXPECT_EQ(ran, 6);
}

}  // namespace
}  // namespace vkspmd::testing
