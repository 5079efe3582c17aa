// The equivalence matrix (issue 6's main bar): every program x sharding configuration x mesh
// (1, 2, 3, 4, 6, 8 devices; 1-D, 2-D, 3-D; named, unnamed, permuted) x even and uneven sizes.
// The partitioned module runs on the CPU reference over emulated devices with poisoned padding;
// the re-assembled result must equal the unpartitioned one. Each case also checks that dot and
// reduce operands really are shards, and that the bytes sent per device do not exceed the
// figure recorded for the case in equivalence_bytes.txt.
#include <algorithm>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/str_join.h"
#include "fmt/format.h"
#include "gtest/gtest.h"
#include "src/ir/parser.h"
#include "src/spmd/partition_spec.h"
#include "tests/spmd/programs.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd::testing {
namespace {

struct MeshCase {
  std::string name;
  Mesh mesh;
};

std::vector<MeshCase> Meshes() {
  const auto make = [](std::vector<int64_t> shape, std::vector<std::string> names,
                       std::vector<int64_t> ids = {}) {
    return *Mesh::Create(std::move(shape), std::move(ids), std::move(names));
  };
  return {
      {"1", make({1}, {})},
      {"2x", make({2}, {"x"})},
      {"3", make({3}, {})},
      {"4", make({4}, {})},
      {"2x2xy", make({2, 2}, {"x", "y"})},
      {"2x2permuted", make({2, 2}, {}, {3, 1, 0, 2})},
      {"2x3", make({2, 3}, {})},
      {"3x2ab", make({3, 2}, {"a", "b"})},
      {"2x4", make({2, 4}, {"dp", "tp"})},
      {"2x2x2xyz", make({2, 2, 2}, {"x", "y", "z"})},
      {"6", make({6}, {})},
      {"8", make({8}, {"all"})},
  };
}

const std::vector<Sizes>& SizeCases() {
  static const std::vector<Sizes> sizes = {{24, 12, 8, "even"}, {7, 5, 9, "uneven"}};
  return sizes;
}

// A spec written over axes 0..2 for `mesh`: axes the mesh lacks are dropped, and named meshes
// get their axis names so that both spellings are exercised.
const std::map<std::string, int64_t>& RecordedBytes() {
  static const std::map<std::string, int64_t>* recorded = [] {
    auto* figures = new std::map<std::string, int64_t>;
    std::ifstream file(VKSPMD_EQUIVALENCE_BYTES);
    std::string line;
    while (std::getline(file, line)) {
      if (line.empty() || line[0] == '#') continue;
      std::istringstream fields(line);
      std::string name;
      int64_t bytes = 0;
      if (fields >> name >> bytes) (*figures)[name] = bytes;
    }
    return figures;
  }();
  return *recorded;
}

// With VKSPMD_RECORD_BYTES=FILE the figures are appended to FILE instead of checked.
void RecordOrCheckBytes(const std::string& name, int64_t bytes) {
  if (const char* path = std::getenv("VKSPMD_RECORD_BYTES")) {
    std::ofstream(path, std::ios::app) << name << " " << bytes << "\n";
    return;
  }
  const auto found = RecordedBytes().find(name);
  if (found == RecordedBytes().end()) {
    ADD_FAILURE() << name << ": no recorded byte figure (" << bytes << " bytes per device); "
                  << "record with VKSPMD_RECORD_BYTES";
    return;
  }
  EXPECT_LE(bytes, found->second) << name << " moves more bytes per device than recorded";
}

// Dot and reduce operands are real shards: each local operand has the shard shape of the
// sharding the op ran with, and an op whose operands propagation split does not run on whole
// operands only (unless it is a recorded fallback). Returns how many operands ran exactly as
// propagated.
int64_t CheckLocalOps(const std::string& name, const ir::Module& module, const Mesh& mesh,
                      const PartitionResult& result) {
  int64_t as_propagated = 0;
  for (const LocalOpRecord& record : result.local_ops) {
    const ir::Instruction* original = nullptr;
    for (const auto& instruction : module.entry()->instructions()) {
      if (instruction->name() == record.instruction) original = instruction.get();
    }
    EXPECT_NE(original, nullptr);
    if (original == nullptr) continue;
    bool split_propagated = false, split_executed = false;
    for (size_t i = 0; i < record.operand_shardings.size(); ++i) {
      EXPECT_EQ(record.local_operand_shapes[i],
                ShardShape(record.global_operand_shapes[i], record.operand_shardings[i], mesh))
          << name << " %" << record.instruction << " operand " << i;
      const AxisSharding& propagated = result.propagation.shardings.at(original->operand(i))[0];
      split_propagated = split_propagated || propagated.NumTiles(mesh) > 1;
      split_executed = split_executed || record.operand_shardings[i].NumTiles(mesh) > 1;
      as_propagated += record.operand_shardings[i] == propagated;
    }
    const bool fallback =
        std::any_of(result.fallbacks.begin(), result.fallbacks.end(),
                    [&](const FallbackRecord& f) { return f.instruction == record.instruction; });
    EXPECT_TRUE(split_executed || !split_propagated || fallback)
        << name << " %" << record.instruction << " ran on whole operands";
  }
  return as_propagated;
}

// Replication fallbacks only where GSPMD-NOTES.md says GSPMD falls back too: window-like ops
// without halo exchange, reshapes of unevenly split dims, variadic reduces, whole-shape
// generators.
void CheckFallbacks(const std::string& name, const ir::Module& module,
                    const PartitionResult& result) {
  for (const FallbackRecord& fallback : result.fallbacks) {
    for (const auto& instruction : module.entry()->instructions()) {
      if (instruction->name() != fallback.instruction) continue;
      const ir::Opcode opcode = instruction->opcode();
      const bool allowed =
          opcode == ir::Opcode::kSlice || opcode == ir::Opcode::kPad ||
          opcode == ir::Opcode::kReverse || opcode == ir::Opcode::kConcatenate ||
          opcode == ir::Opcode::kDynamicSlice || opcode == ir::Opcode::kDynamicUpdateSlice ||
          opcode == ir::Opcode::kReshape || opcode == ir::Opcode::kRngBitGenerator ||
          (opcode == ir::Opcode::kReduce && instruction->operand_count() > 2);
      EXPECT_TRUE(allowed) << name << ": fallback on %" << fallback.instruction << ": "
                           << fallback.description;
    }
  }
}

}  // namespace

// Names the program in failure messages instead of dumping its bytes.
void PrintTo(const Program& program, std::ostream* out) { *out << program.name; }

namespace {

class EquivalenceTest : public ::testing::TestWithParam<Program> {};

TEST_P(EquivalenceTest, PartitionedEqualsUnpartitioned) {
  const Program& program = GetParam();
  int64_t cases = 0, fallbacks = 0, as_propagated = 0;
  for (const MeshCase& mesh_case : Meshes()) {
    for (const Sizes& sizes : SizeCases()) {
      for (size_t config = 0; config < program.configs.size(); ++config) {
        const std::string name =
            fmt::format("{}/c{}/{}/{}", program.name, config, mesh_case.name, sizes.name);
        std::map<std::string, std::string> specs;
        for (const auto& [target, spec] : program.configs[config]) {
          specs[target] = AdaptSpec(spec, mesh_case.mesh);
        }
        absl::StatusOr<std::unique_ptr<ir::Module>> module =
            AnnotatedModule(Instantiate(program.text, sizes), specs, mesh_case.mesh);
        ASSERT_TRUE(module.ok()) << name << ": " << module.status();
        absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh_case.mesh);
        ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status();
        EXPECT_LT(outcome->difference, 1e-5) << name;
        as_propagated += CheckLocalOps(name, **module, mesh_case.mesh, outcome->partition);
        RecordOrCheckBytes(name, outcome->partition.BytesPerDevice());
        CheckFallbacks(name, **module, outcome->partition);
        fallbacks += static_cast<int64_t>(outcome->partition.fallbacks.size());
        ++cases;
      }
    }
  }
  RecordProperty("cases", static_cast<int>(cases));
  RecordProperty("fallbacks", static_cast<int>(fallbacks));
  RecordProperty("operands_as_propagated", static_cast<int>(as_propagated));
}

INSTANTIATE_TEST_SUITE_P(Programs, EquivalenceTest, ::testing::ValuesIn(EquivalencePrograms()),
                         [](const ::testing::TestParamInfo<Program>& param) {
                           return param.param.name;
                         });

// The layout the partitioner gave a value is the one its annotation means: every device holds
// the block ir::Sharding's own tile queries (XLA's TileOffsetForDevice/TileLimitForDevice) give,
// or the value when it is maximal on that device.
void ExpectLayoutOfAnnotation(const std::string& name, const ir::Shape& shape,
                              const ir::Sharding& annotation, const AxisSharding& sharding,
                              const Mesh& mesh) {
  if (annotation.kind() == ir::Sharding::Kind::kMaximal) {
    EXPECT_EQ(sharding.maximal_device, annotation.maximal_device()) << name;
    return;
  }
  for (int64_t device = 0; device < mesh.device_count(); ++device) {
    std::vector<int64_t> offsets, limits;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      offsets.push_back(ShardOffset(shape, sharding, d, mesh, device));
      limits.push_back(offsets.back() + ShardValidSize(shape, sharding, d, mesh, device));
    }
    std::vector<int64_t> limits_wanted = annotation.TileLimitForDevice(shape, device);
    std::vector<int64_t> offsets_wanted = annotation.TileOffsetForDevice(shape, device);
    // An empty trailing tile may start anywhere: compare it as empty.
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (offsets_wanted[d] >= limits_wanted[d]) offsets_wanted[d] = limits_wanted[d];
      if (offsets[d] >= limits[d]) offsets[d] = limits[d] = limits_wanted[d];
    }
    EXPECT_EQ(offsets, offsets_wanted) << name << " device " << device << " " << shape.ToString()
                                       << " " << sharding.ToString(mesh);
    EXPECT_EQ(limits, limits_wanted) << name << " device " << device;
  }
}

// Runs `text` with the forms in rotation (s_j = forms[(i + j) % n]) and with one form for all.
void RunForms(const char* text, int64_t slots, const std::vector<FormsCase>& forms_cases,
              const std::vector<Sizes>& sizes, int64_t* cases) {
  for (const FormsCase& forms_case : forms_cases) {
    const size_t n = forms_case.forms.size();
    for (const Mesh& mesh : forms_case.meshes) {
      for (const Sizes& size : sizes) {
        for (size_t i = 0; i < 2 * n; ++i) {
          const std::vector<std::string> s = FormsInRotation(forms_case.forms, i);
          const std::string program = InstantiateForms(text, mesh.device_count(), size, s);
          const std::string name = fmt::format("mesh {} {} [{}]", mesh.ToString(), size.name,
                                               absl::StrJoin(s.begin(), s.begin() + slots, " "));
          absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(program);
          ASSERT_TRUE(module.ok()) << name << ": " << module.status();
          absl::StatusOr<EquivalenceOutcome> outcome = RunEquivalence(**module, mesh);
          ASSERT_TRUE(outcome.ok()) << name << ": " << outcome.status();
          EXPECT_LT(outcome->difference, 1e-5) << name;
          const PartitionResult& result = outcome->partition;
          for (int64_t p = 0; p < 2; ++p) {
            const ir::Instruction* parameter = (*module)->entry()->parameter(p);
            ExpectLayoutOfAnnotation(name, parameter->shape(), *parameter->sharding(),
                                     result.parameter_shardings[p][0], result.mesh);
          }
          const ir::Instruction* root = (*module)->entry()->root();
          const ir::Sharding& root_sharding = *root->sharding();
          ExpectLayoutOfAnnotation(
              name, root->shape().IsTuple() ? root->shape().tuple_elements()[0] : root->shape(),
              root_sharding.kind() == ir::Sharding::Kind::kTuple ? root_sharding.tuple_elements()[0]
                                                                 : root_sharding,
              result.result_shardings[0], result.mesh);
          ++*cases;
        }
      }
    }
  }
}

// Every tile-assignment form the HLO syntax allows (issue 19): explicit device lists in any
// order, iota tile assignments with reshape and transpose, last_tile_dim_replicate,
// last_tile_dims={replicated...}, maximal and replicated, on 2, 4, 6, 8 and 12 devices, over meshes
// whose axes produce them and over one-axis meshes the partitioner refines. Each case annotates
// the parameters, a Sharding custom-call, a dot and the root with forms in rotation (so values
// are resharded between forms of different device orders) and once with one form throughout;
// the per-device programs run on the CPU reference against the unpartitioned program.
TEST(EquivalenceMatrixTest, EveryTileAssignmentForm) {
  int64_t cases = 0;
  RunForms(kTileAssignmentFormsProgram, 5, TileAssignmentForms2d(), SizeCases(), &cases);
  RunForms(kTileAssignmentForms3dProgram, 4, TileAssignmentForms3d(), {SizeCases()[0]}, &cases);
  RecordProperty("cases", static_cast<int>(cases));
  EXPECT_EQ(cases, 2 * 2 * (7 + 2 * 8 + 2 * 7 + 2 * 7) + 2 * (4 + 2 * 5));
}

TEST(EquivalenceMatrixTest, CoversAtLeastFortyPrograms) {
  EXPECT_GE(EquivalencePrograms().size(), 40u);
}

}  // namespace
}  // namespace vkspmd::spmd::testing
