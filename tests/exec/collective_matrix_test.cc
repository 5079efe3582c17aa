// Every collective x element type x replica-group layout x size, run as per-device programs on
// lavapipe devices (host-staged through the communicator), equals the CPU reference evaluator's
// collectives bit for bit: all-reduce with every reducer, all-gather, reduce-scatter, all-to-all
// and collective-permute, over the full group, either axis of a 2x4 mesh, 3 devices and two
// groups of 3 out of 6, with 1 and 7 elements per chunk. f16 and bf16 reduce in f32 with one
// rounding per step in group order on both sides, so they match bit for bit too. 16 MiB per rank
// runs for a sample in CI and for every layout and type under the `slow` label
// (VKSPMD_FULL_COLLECTIVE_MATRIX=1). With VKSPMD_DEVICE_COLLECTIVES=1 and VKSPMD_SHARED_QUEUES=1
// (ctest exec_device_collectives*) the same matrix runs the device-side collectives.
#include <gtest/gtest.h>

#include <cstdlib>
#include <string>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/exec/mesh_executable.h"
#include "src/interp/evaluator.h"
#include "src/ir/parser.h"
#include "tests/exec/random_module.h"
#include "tests/support/device_test.h"

namespace vkspmd::testing {
namespace {

struct Layout {
  const char* name;
  int devices;
  std::vector<std::vector<int>> groups;
};

const std::vector<Layout>& Layouts() {
  static const auto* layouts = new std::vector<Layout>{
      {"full group of 8", 8, {{0, 1, 2, 3, 4, 5, 6, 7}}},
      {"axis 0 of 2x4", 8, {{0, 4}, {1, 5}, {2, 6}, {3, 7}}},
      {"axis 1 of 2x4", 8, {{0, 1, 2, 3}, {4, 5, 6, 7}}},
      {"3 devices", 3, {{0, 1, 2}}},
      {"2 groups of 3 out of 6", 6, {{0, 2, 4}, {1, 3, 5}}},
  };
  return *layouts;
}

std::string GroupsText(const std::vector<std::vector<int>>& groups) {
  std::vector<std::string> parts;
  for (const auto& group : groups)
    parts.push_back(absl::StrCat("{", absl::StrJoin(group, ","), "}"));
  return absl::StrCat("{", absl::StrJoin(parts, ","), "}");
}

// Every member sends to the next one of its group, the last to the first.
std::string CyclePairs(const std::vector<std::vector<int>>& groups) {
  std::vector<std::string> pairs;
  for (const auto& group : groups) {
    for (size_t i = 0; i < group.size(); ++i) {
      pairs.push_back(absl::StrCat("{", group[i], ",", group[(i + 1) % group.size()], "}"));
    }
  }
  return absl::StrCat("{", absl::StrJoin(pairs, ","), "}");
}

// A per-device program applying every collective to one parameter of `chunk` elements per group
// member. `reducers` names the reductions, each with a computation of the same name.
std::string Program(const std::string& type, const Layout& layout, int64_t chunk,
                    const std::vector<std::pair<std::string, std::string>>& reducers,
                    bool movement) {
  const int64_t g = static_cast<int64_t>(layout.groups[0].size());
  const std::string groups = GroupsText(layout.groups);
  const std::string x = absl::StrCat(type, "[", g * chunk, "]");
  std::string text = absl::StrCat("HloModule collectives, num_partitions=", layout.devices, "\n");
  for (const auto& [name, opcode] : reducers) {
    absl::StrAppend(&text, "%", name, " (a: ", type, "[], b: ", type, "[]) -> ", type,
                    "[] {\n  %a = ", type, "[] parameter(0)\n  %b = ", type,
                    "[] parameter(1)\n  ROOT %r = ", type, "[] ", opcode, "(%a, %b)\n}\n");
  }
  std::vector<std::string> shapes, names;
  std::string body;
  int channel = 1;
  for (const auto& [name, opcode] : reducers) {
    absl::StrAppend(&body, "  %ar_", name, " = ", x, " all-reduce(%x), channel_id=", channel++,
                    ", replica_groups=", groups, ", use_global_device_ids=true, to_apply=%", name,
                    "\n");
    shapes.push_back(x);
    names.push_back(absl::StrCat("%ar_", name));
  }
  if (movement) {
    const std::string gathered = absl::StrCat(type, "[", g * g * chunk, "]");
    const std::string scattered = absl::StrCat(type, "[", chunk, "]");
    absl::StrAppend(&body, "  %ag = ", gathered, " all-gather(%x), channel_id=", channel++,
                    ", replica_groups=", groups, ", use_global_device_ids=true, dimensions={0}\n");
    absl::StrAppend(&body, "  %rs = ", scattered, " reduce-scatter(%x), channel_id=", channel++,
                    ", replica_groups=", groups, ", use_global_device_ids=true, dimensions={0}",
                    ", to_apply=%", reducers[0].first, "\n");
    absl::StrAppend(&body, "  %a2a = ", x, " all-to-all(%x), channel_id=", channel++,
                    ", replica_groups=", groups, ", dimensions={0}\n");
    absl::StrAppend(&body, "  %cp = ", x, " collective-permute(%x), channel_id=", channel++,
                    ", source_target_pairs=", CyclePairs(layout.groups), "\n");
    shapes.insert(shapes.end(), {gathered, scattered, x, x});
    names.insert(names.end(), {"%ag", "%rs", "%a2a", "%cp"});
  }
  const std::string tuple = absl::StrCat("(", absl::StrJoin(shapes, ", "), ")");
  absl::StrAppend(&text, "ENTRY %main (x: ", x, ") -> ", tuple, " {\n  %x = ", x, " parameter(0)\n",
                  body, "  ROOT %out = ", tuple, " tuple(", absl::StrJoin(names, ", "), ")\n}\n");
  return text;
}

std::vector<std::pair<std::string, std::string>> ReducersFor(const std::string& type) {
  if (type == "pred") return {{"and", "and"}, {"or", "or"}};
  return {{"sum", "add"}, {"product", "multiply"}, {"min", "minimum"}, {"max", "maximum"}};
}

bool SharedVkDevice(const std::vector<runtime::MeshDevice*>& devices) {
  for (runtime::MeshDevice* device : devices) {
    if (device->handle() != devices[0]->handle()) return false;
  }
  return true;
}

class CollectiveMatrixTest : public DeviceTest {
 protected:
  void SetUp() override { OpenDevices(8); }

  // Runs the program on its devices and on the evaluator; every device's every output must be
  // bitwise identical.
  void ExpectMatches(const std::string& type, const Layout& layout, int64_t chunk,
                     bool movement = true,
                     std::vector<std::pair<std::string, std::string>> reducers = {}) {
    if (reducers.empty()) reducers = ReducersFor(type);
    SCOPED_TRACE(absl::StrCat(type, ", ", layout.name, ", ", chunk, " elements per chunk"));
    const std::string text = Program(type, layout, chunk, reducers, movement);
    absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
    ASSERT_TRUE(module.ok()) << module.status() << "\n" << text;
    std::vector<std::vector<ir::Literal>> arguments;
    for (int d = 0; d < layout.devices; ++d) {
      // Small integers keep products of 8 values exact in every type.
      arguments.push_back(RandomArguments(**module, 1000 + d, -3, 3));
    }
    absl::StatusOr<std::vector<ir::Literal>> reference =
        interp::EvaluateOnDevices(**module, arguments);
    ASSERT_TRUE(reference.ok()) << reference.status();
    std::vector<runtime::MeshDevice*> devices;
    for (int d = 0; d < layout.devices; ++d) devices.push_back(&device(d));
    absl::StatusOr<std::unique_ptr<exec::MeshExecutable>> executable =
        exec::MeshExecutable::Compile(**module, devices);
    ASSERT_TRUE(executable.ok()) << executable.status();
    if ((*executable)->device_collectives() && SharedVkDevice(devices)) {
      // VKSPMD_DEVICE_COLLECTIVES with every device on one VkDevice: the 4-byte reductions
      // (all-reduces, reduce-scatter) and the movements (all along dim 0) run on the devices,
      // 16-bit and byte reductions through the host.
      const bool four_byte = type == "f32" || type == "s32" || type == "u32";
      EXPECT_EQ((*executable)->executable(0).device_collective_count(),
                (four_byte ? reducers.size() : 0) + (movement ? (four_byte ? 4 : 3) : 0));
    }
    absl::StatusOr<std::vector<ir::Literal>> results = (*executable)->Run(arguments);
    ASSERT_TRUE(results.ok()) << results.status();
    for (int d = 0; d < layout.devices; ++d) {
      const auto& got = (*results)[d].tuple_elements();
      const auto& want = (*reference)[d].tuple_elements();
      ASSERT_EQ(got.size(), reducers.size() + (movement ? 4 : 0));
      ASSERT_EQ(want.size(), got.size());
      for (size_t k = 0; k < got.size(); ++k) {
        ASSERT_EQ(got[k].shape(), want[k].shape()) << "device " << d << " output " << k;
        EXPECT_TRUE(got[k].bytes() == want[k].bytes()) << "device " << d << " output " << k;
      }
    }
  }
};

TEST_F(CollectiveMatrixTest, EveryCollectiveTypeAndLayoutWithSmallAndOddChunks) {
  for (const Layout& layout : Layouts()) {
    for (const char* type : {"f32", "s32", "u32", "pred", "f16", "bf16"}) {
      for (int64_t chunk : {1, 7}) ExpectMatches(type, layout, chunk);
    }
  }
}

TEST_F(CollectiveMatrixTest, SixteenMebibytesPerRank) {
  constexpr int64_t kElements = (16 << 20) / 4;
  const bool full = std::getenv("VKSPMD_FULL_COLLECTIVE_MATRIX") != nullptr;
  for (const Layout& layout : Layouts()) {
    const int64_t chunk = kElements / static_cast<int64_t>(layout.groups[0].size());
    if (!full) {
      // The sample: a sum over groups along axis 0 and every data movement, in f32.
      if (std::string(layout.name) != "axis 0 of 2x4") continue;
      ExpectMatches("f32", layout, chunk, true, {{"sum", "add"}});
      continue;
    }
    for (const char* type : {"f32", "s32", "u32"}) ExpectMatches(type, layout, chunk);
  }
}

}  // namespace
}  // namespace vkspmd::testing
