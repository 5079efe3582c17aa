// The partitioner's equivalence programs executed on Vulkan devices: each program partitioned
// over a mesh of 1, 2, 4 or 8 lavapipe devices (1-D and 2-D), its per-device program compiled
// for every device and run with host-staged collectives, the shards re-assembled and compared
// with the unpartitioned program on the CPU reference. CI runs every program on two meshes (a
// rotating pair, one size set each); VKSPMD_FULL_DEVICE_EQUIVALENCE=1 (the `slow` label) runs
// every program on every mesh and both size sets. A program the device compiler refuses
// (UNIMPLEMENTED) fails the test unless kKnownUnsupported names it with the reason; a listed
// program that compiles fails it too, so the list cannot go stale.
#include <gtest/gtest.h>

#include <cstdlib>
#include <map>
#include <set>

#include "fmt/format.h"
#include "fmt/ranges.h"
#include "src/base/status_macros.h"
#include "src/exec/mesh_executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/spmd/programs.h"
#include "tests/spmd/spmd_test_util.h"
#include "tests/support/device_test.h"

namespace vkspmd::spmd::testing {
namespace {

struct MeshCase {
  std::string name;
  std::vector<int64_t> shape;
};

const std::vector<MeshCase>& MeshCases() {
  static const std::vector<MeshCase> cases = {
      {"1", {1}}, {"2", {2}}, {"4", {4}}, {"2x2", {2, 2}}, {"8", {8}}};
  return cases;
}

const std::vector<Sizes>& SizeCases() {
  static const std::vector<Sizes> cases = {{24, 12, 8, "even"}, {7, 5, 9, "uneven"}};
  return cases;
}

struct KnownUnsupported {
  std::string message;  // a part of the compiler's UNIMPLEMENTED message
  std::string reason;
};

// Programs the device compiler refuses on every mesh, by name. Each is a feature the device
// compiler does not have (src/codegen/planner.cc refuses tuple-shaped values), not a fault of this
// program; the CPU reference stands in for the device.
const std::map<std::string, KnownUnsupported>& KnownUnsupportedPrograms() {
  static const std::map<std::string, KnownUnsupported> programs = {
      {"argmax",
       {"does not support reduce",
        "a variadic reduce (value and index, tuple-shaped): the device compiler has no "
        "tuple-shaped values (the Tensor API's argmax lowers to two plain reduces instead)"}},
      {"tuple_parameter",
       {"does not support parameter",
        "a tuple-shaped parameter: the device compiler has no tuple-shaped values"}},
  };
  return programs;
}

// The (mesh, size set) pairs a program runs on: all of them in the full matrix; in CI two
// different meshes (at least one with several devices) with one size set each, rotating with
// the program's index so that every mesh and both size sets are covered.
std::vector<std::pair<size_t, size_t>> RunsOf(size_t program_index, bool full) {
  std::vector<std::pair<size_t, size_t>> runs;
  const size_t meshes = MeshCases().size(), sizes = SizeCases().size();
  if (full) {
    for (size_t m = 0; m < meshes; ++m) {
      for (size_t s = 0; s < sizes; ++s) runs.push_back({m, s});
    }
    return runs;
  }
  runs.push_back({program_index % meshes, program_index % sizes});
  runs.push_back({(program_index + 2) % meshes, (program_index + 1) % sizes});
  return runs;
}

class DeviceEquivalenceTest : public vkspmd::testing::DeviceTest {
 protected:
  // The opened devices that run mesh devices 0..count-1.
  std::vector<runtime::MeshDevice*> FirstDevices(size_t count) {
    std::vector<runtime::MeshDevice*> devices;
    for (size_t d = 0; d < count; ++d) devices.push_back(&device(static_cast<int>(d)));
    return devices;
  }
};

TEST_F(DeviceEquivalenceTest, PartitionedProgramsOnDevicesEqualTheUnpartitionedReference) {
  const bool full = std::getenv("VKSPMD_FULL_DEVICE_EQUIVALENCE") != nullptr;
  OpenDevices(8);
  const std::vector<Program>& programs = EquivalencePrograms();
  std::set<std::string> names;
  for (const Program& program : programs) names.insert(program.name);
  for (const auto& [name, known] : KnownUnsupportedPrograms()) {
    EXPECT_TRUE(names.count(name))
        << "the known-unsupported program " << name << " is no equivalence program";
  }
  int ran_on_devices = 0;
  for (size_t p = 0; p < programs.size(); ++p) {
    const Program& program = programs[p];
    auto listed = KnownUnsupportedPrograms().find(program.name);
    const KnownUnsupported* known =
        listed == KnownUnsupportedPrograms().end() ? nullptr : &listed->second;
    for (const auto& [m, s] : RunsOf(p, full)) {
      const MeshCase& mesh_case = MeshCases()[m];
      const Sizes& sizes = SizeCases()[s];
      absl::StatusOr<Mesh> mesh = Mesh::Create(mesh_case.shape, {}, {});
      ASSERT_TRUE(mesh.ok()) << mesh.status();
      const std::string name = fmt::format("{}/{}/{}", program.name, mesh_case.name, sizes.name);
      std::map<std::string, std::string> specs;
      for (const auto& [target, spec] : program.configs[0]) {
        specs[target] = AdaptSpec(spec, *mesh);
      }
      absl::StatusOr<std::unique_ptr<ir::Module>> module =
          AnnotatedModule(Instantiate(program.text, sizes), specs, *mesh);
      ASSERT_TRUE(module.ok()) << name << ": " << module.status();
      bool on_devices = false;
      DeviceRunner run = [&](const ir::Module& partitioned,
                             const std::vector<std::vector<ir::Literal>>& per_device)
          -> absl::StatusOr<std::vector<ir::Literal>> {
        const std::vector<runtime::MeshDevice*> devices = FirstDevices(per_device.size());
        absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> executable =
            exec::MeshExecutable::Compile(partitioned, devices);
        if (known == nullptr) {
          if (!executable.ok()) return executable.status();
          on_devices = true;
          return (*executable)->Run(per_device);
        }
        // A listed program: the compiler must still refuse it, for the listed reason; the CPU
        // reference stands in so the partitioning is still checked.
        if (executable.ok()) {
          ADD_FAILURE() << name << " compiles for the devices now: remove it from "
                        << "KnownUnsupportedPrograms";
        } else {
          EXPECT_TRUE(absl::IsUnimplemented(executable.status()) &&
                      executable.status().message().find(known->message) != std::string::npos)
              << name << ": the device compiler refuses it for another reason than the listed \""
              << known->message << "\": " << executable.status();
        }
        return interp::EvaluateOnDevices(partitioned, per_device);
      };
      absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, *mesh, 1, run);
      EXPECT_TRUE(outcome.ok()) << name << ": " << outcome.status()
                                << (absl::IsUnimplemented(outcome.status())
                                        ? " (a program the devices cannot run fails this test "
                                          "unless KnownUnsupportedPrograms lists it)"
                                        : "");
      if (!outcome.ok()) continue;
      // f32 on the device (transcendentals within a few ulp, other summation orders) against
      // the reference: relative to 1 + |value|.
      EXPECT_LT(outcome->difference, 2e-4) << name;
      ran_on_devices += on_devices ? 1 : 0;
    }
  }
  std::cout << ran_on_devices << " runs on devices";
  for (const auto& [name, known] : KnownUnsupportedPrograms()) {
    std::cout << "; " << name << " on the CPU reference: " << known.reason;
  }
  std::cout << "\n";
}

// A sample of the tile-assignment forms of issue 19 on lavapipe devices (the whole matrix runs on
// the CPU reference in spmd_equivalence_test): per device count one mesh (the refined one-axis
// mesh for 4 and 8) and three rotations of its forms, odd sizes for 2 and 8 devices.
TEST_F(DeviceEquivalenceTest, TileAssignmentFormsOnDevices) {
  OpenDevices(8);
  const Sizes uneven = SizeCases()[1];
  int runs = 0;
  for (const FormsCase& forms_case : TileAssignmentForms2d()) {
    const Mesh& mesh = forms_case.meshes[0];
    if (mesh.device_count() == 6) continue;  // 2, 4 and 8 devices
    const Sizes& sizes = mesh.device_count() == 4 ? SizeCases()[0] : uneven;
    for (size_t i = 0; i < 3; ++i) {
      const std::vector<std::string> slots = FormsInRotation(forms_case.forms, i);
      const std::string name =
          fmt::format("{} devices, forms {}", mesh.device_count(), fmt::join(slots, " "));
      absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(
          InstantiateForms(kTileAssignmentFormsProgram, mesh.device_count(), sizes, slots));
      ASSERT_TRUE(module.ok()) << name << ": " << module.status();
      DeviceRunner run = [&](const ir::Module& partitioned,
                             const std::vector<std::vector<ir::Literal>>& per_device)
          -> absl::StatusOr<std::vector<ir::Literal>> {
        const std::vector<runtime::MeshDevice*> devices = FirstDevices(per_device.size());
        VKSPMD_ASSIGN_OR_RETURN(std::unique_ptr<exec::MeshExecutable> executable,
                                exec::MeshExecutable::Compile(partitioned, devices));
        return executable->Run(per_device);
      };
      absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh, 1, run);
      ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status();
      EXPECT_LT(outcome->difference, 2e-4) << name;
      ++runs;
    }
  }
  EXPECT_EQ(runs, 9);
}

}  // namespace
}  // namespace vkspmd::spmd::testing
