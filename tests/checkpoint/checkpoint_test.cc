// Sharded checkpoints on lavapipe devices: save on every mesh and sharding, restore on every
// other (bitwise), replicas written once, damaged steps refused with the file named, steps never
// overwritten, async snapshots, keep-N, stale temporaries, and the state saved beside tensors.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"
#include "src/io/checksum.h"
#include "tests/checkpoint/checkpoint_test_util.h"
#include "tests/lazy/lazy_test_util.h"
#include "tests/support/python_numpy.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd {
namespace {

namespace fs = std::filesystem;
using testing::BitwiseDifference;
using testing::DistinctValues;
using testing::FreshDirectory;
using testing::ThrownMessage;

// A mesh and how a rank-2 tensor is split over it (rank-1 tensors use the first entry, rank-0
// none); no mesh means host data.
struct Layout {
  std::string label;
  std::optional<Mesh> mesh;
  PartitionSpec spec;
};

std::vector<Layout> Layouts() {
  const Mesh one({1}, {}, {"x"}), two({2}, {}, {"x"}), three({3}, {}, {"x"}),
      four({4}, {}, {"fsdp"}), square({2, 2}, {}, {"dp", "tp"});
  std::vector<Layout> layouts = {{"host", std::nullopt, {}}};
  for (const auto& [name, mesh, axis] :
       {std::tuple{"1", one, "x"}, {"2", two, "x"}, {"3", three, "x"}, {"4", four, "fsdp"}}) {
    layouts.push_back({absl::StrCat(name, " rows"), mesh, {axis, None}});
    layouts.push_back({absl::StrCat(name, " cols"), mesh, {None, axis}});
    layouts.push_back({absl::StrCat(name, " replicated"), mesh, {None, None}});
  }
  layouts.push_back({"2x2 dp,tp", square, {"dp", "tp"}});
  layouts.push_back({"2x2 tp,dp", square, {"tp", "dp"}});
  layouts.push_back({"2x2 none,tp", square, {None, "tp"}});
  layouts.push_back({"2x2 (dp,tp),none", square, {Axes{"dp", "tp"}, None}});
  return layouts;
}

// The tensors each test saves: odd and prime sizes, every dtype, a scalar.
struct Specimen {
  std::string name;
  std::vector<int64_t> shape;
  DType dtype;
};
const std::vector<Specimen>& Specimens() {
  static const std::vector<Specimen> specimens = {{"weight", {7, 10}, DType::kFloat32},
                                                  {"counts", {5}, DType::kInt32},
                                                  {"mask", {3, 13}, DType::kBool},
                                                  {"scale", {}, DType::kFloat32}};
  return specimens;
}

// Tensors of the specimens placed by `layout`, holding `values`.
std::vector<Tensor> Place(const Layout& layout, const std::vector<HostTensor>& values) {
  std::vector<Tensor> tensors;
  for (const HostTensor& value : values) {
    Tensor tensor = from_host(value);
    if (layout.mesh.has_value()) {
      PartitionSpec spec(layout.spec.begin(),
                         layout.spec.begin() + static_cast<int64_t>(value.shape.size()));
      mark_sharding(tensor, *layout.mesh, spec);
    }
    tensors.push_back(tensor);
  }
  return tensors;
}

std::vector<HostTensor> Values(uint64_t seed) {
  std::vector<HostTensor> values;
  for (const Specimen& specimen : Specimens()) {
    values.push_back(DistinctValues(specimen.shape, specimen.dtype, seed + values.size()));
  }
  return values;
}

CheckpointState StateOf(const std::vector<Tensor>& tensors) {
  CheckpointState state;
  for (size_t i = 0; i < tensors.size(); ++i) state.add(Specimens()[i].name, tensors[i]);
  state.rng = false;
  return state;
}

class CheckpointTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { setenv("VKSPMD_DEVICES", "4", 0); }
};

TEST_F(CheckpointTest, EveryLayoutRestoresOntoEveryOtherBitwise) {
  const std::string directory = FreshDirectory("matrix");
  const std::vector<Layout> layouts = Layouts();
  for (size_t s = 0; s < layouts.size(); ++s) {
    std::vector<Tensor> tensors = Place(layouts[s], Values(100 * s));
    save_checkpoint(directory, static_cast<int64_t>(s), StateOf(tensors));
  }
  for (const Layout& target : layouts) {
    std::vector<Tensor> tensors = Place(target, Values(7777));
    std::vector<std::string> specs;
    for (const Tensor& tensor : tensors) specs.push_back(sharding_spec(tensor));
    CheckpointState state = StateOf(tensors);
    for (size_t s = 0; s < layouts.size(); ++s) {
      SCOPED_TRACE(absl::StrCat("saved as ", layouts[s].label, ", restored as ", target.label));
      restore_checkpoint(absl::StrFormat("%s/step_%08d", directory, s), state);
      const std::vector<HostTensor> expected = Values(100 * s);
      for (size_t i = 0; i < tensors.size(); ++i) {
        EXPECT_EQ(BitwiseDifference(tensors[i].to_host(), expected[i]), "") << Specimens()[i].name;
        EXPECT_EQ(sharding_spec(tensors[i]), specs[i]) << "the target keeps its sharding";
      }
    }
  }
}

// A transformer's parameters and AdamW state under each strategy and mesh, restored under every
// other (vocab 67 and widths that 3 devices do not divide: uneven shards).
TEST_F(CheckpointTest, EveryStrategyRestoresOntoEveryOtherBitwise) {
  const std::vector<std::pair<std::string, std::vector<int64_t>>> strategies = {
      {"dp", {1}}, {"dp", {2}}, {"tp", {2}}, {"fsdp", {4}}, {"dp+tp", {2, 2}}, {"fsdp", {3}}};
  nn::TransformerConfig config;
  config.vocab = 67;
  config.d_model = 20;
  config.heads = 2;
  config.layers = 1;
  config.max_seq = 10;
  struct Trained {
    std::unique_ptr<nn::TransformerLM> model;
    std::unique_ptr<optim::AdamW> optimizer;
    CheckpointState state;
  };
  auto make = [&](size_t index, uint64_t seed) {
    Trained trained;
    manual_seed(seed);
    trained.model = std::make_unique<nn::TransformerLM>(config);
    const auto& [strategy, shape] = strategies[index];
    nn::apply_strategy(*trained.model, nn::strategy_mesh(strategy, shape), strategy);
    trained.optimizer = std::make_unique<optim::AdamW>(trained.model->parameters(), 0.1);
    trained.state.add_module(*trained.model).add_optimizer(*trained.optimizer);
    return trained;
  };
  const std::string directory = FreshDirectory("strategies");
  const std::string seeds = FreshDirectory("strategy_seeds");
  std::vector<std::vector<HostTensor>> saved;
  for (size_t s = 0; s < strategies.size(); ++s) {
    Trained trained = make(s, 10 + s);
    // Distinct values in every tensor (optimizer state included) without running a step: a
    // host-data checkpoint of them, restored onto this strategy's shardings.
    CheckpointState seed;
    seed.rng = false;
    std::vector<int64_t> ones(trained.optimizer->params().size(), 1);
    seed.integers.push_back({"optimizer.step_counts", [&] { return ones; }, {}});
    for (size_t i = 0; i < trained.state.tensors.size(); ++i) {
      const auto& [name, tensor] = trained.state.tensors[i];
      seed.add(name, from_host(DistinctValues(tensor.shape(), DType::kFloat32, 1000 * s + i)));
    }
    save_checkpoint(seeds, static_cast<int64_t>(s), seed);
    restore_checkpoint(absl::StrFormat("%s/step_%08d", seeds, s), trained.state);
    save_checkpoint(directory, static_cast<int64_t>(s), trained.state);
    saved.emplace_back();
    for (const auto& [name, tensor] : trained.state.tensors)
      saved.back().push_back(tensor.to_host());
  }
  for (size_t t = 0; t < strategies.size(); ++t) {
    Trained target = make(t, 99);
    for (size_t s = 0; s < strategies.size(); ++s) {
      SCOPED_TRACE(absl::StrCat(strategies[s].first, " saved, ", strategies[t].first, " on ",
                                strategies[t].second.size(), "-D mesh of ",
                                strategies[t].second.back(), " restored"));
      restore_checkpoint(absl::StrFormat("%s/step_%08d", directory, s), target.state);
      EXPECT_EQ(target.optimizer->step_count(0), 1);
      for (size_t i = 0; i < target.state.tensors.size(); ++i) {
        ASSERT_EQ(BitwiseDifference(target.state.tensors[i].second.to_host(), saved[s][i]), "")
            << target.state.tensors[i].first;
      }
    }
  }
}

TEST_F(CheckpointTest, ReplicasAreWrittenOnceStraightFromTheirShards) {
  const std::string directory = FreshDirectory("replicas");
  const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  Tensor weight = from_host(DistinctValues({8, 6}, DType::kFloat32, 1));
  mark_sharding(weight, mesh, {None, "tp"});
  save_checkpoint(directory, 3, CheckpointState().add("w", weight));
  const std::string step = directory + "/step_00000003";
  EXPECT_EQ(testing::ListNames(step), (std::vector<std::string>{"COMMITTED", "device_0.bin",
                                                                "device_1.bin", "manifest.json"}));
  EXPECT_EQ(fs::file_size(step + "/device_0.bin") + fs::file_size(step + "/device_1.bin"),
            8u * 6u * 4u);
  std::ifstream stream(step + "/manifest.json");
  nlohmann::json manifest = nlohmann::json::parse(stream);
  const nlohmann::json& shards = manifest["tensors"][0]["shards"];
  ASSERT_EQ(shards.size(), 2u);
  EXPECT_EQ(shards[0]["devices"], nlohmann::json({0, 2}));
  EXPECT_EQ(shards[1]["devices"], nlohmann::json({1, 3}));
  EXPECT_EQ(shards[1]["start"], nlohmann::json({0, 3}));
  EXPECT_EQ(manifest["tensors"][0]["sharding"], sharding_spec(weight));
  const CheckpointInfo info = checkpoint_info(step);
  EXPECT_EQ(info.step, 3);
  ASSERT_EQ(info.tensors.size(), 1u);
  EXPECT_EQ(info.tensors[0].shard_count, 2);
  EXPECT_EQ(info.bytes, 8 * 6 * 4);
  EXPECT_TRUE(verify_checkpoint(step).empty());
}

// Saves steps 1 and 2 of two tensors; returns the directory.
std::string TwoSteps(const std::string& name, std::vector<Tensor>& tensors) {
  const std::string directory = FreshDirectory(name);
  const Mesh mesh({4}, {}, {"x"});
  tensors = Place({"4 rows", mesh, {"x", None}}, Values(1));
  save_checkpoint(directory, 1, StateOf(tensors));
  tensors = Place({"4 rows", mesh, {"x", None}}, Values(2));
  save_checkpoint(directory, 2, StateOf(tensors));
  return directory;
}

void ExpectRestores(const std::string& step_path, uint64_t seed) {
  std::vector<Tensor> tensors = Place({"host", std::nullopt, {}}, Values(999));
  CheckpointState state = StateOf(tensors);
  restore_checkpoint(step_path, state);
  const std::vector<HostTensor> expected = Values(seed);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(BitwiseDifference(tensors[i].to_host(), expected[i]), "");
  }
}

// Restoring into tensors that must stay as they were.
std::string RestoreError(const std::string& step_path) {
  std::vector<Tensor> tensors = Place({"host", std::nullopt, {}}, Values(999));
  CheckpointState state = StateOf(tensors);
  std::string message = ThrownMessage([&] { restore_checkpoint(step_path, state); });
  const std::vector<HostTensor> unchanged = Values(999);
  for (size_t i = 0; i < tensors.size(); ++i) {
    EXPECT_EQ(BitwiseDifference(tensors[i].to_host(), unchanged[i]), "") << "changed on error";
  }
  return message;
}

void FlipBit(const std::string& path, uint64_t offset) {
  std::fstream file(path, std::ios::in | std::ios::out | std::ios::binary);
  file.seekg(static_cast<std::streamoff>(offset));
  char byte = 0;
  file.read(&byte, 1);
  byte ^= 0x10;
  file.seekp(static_cast<std::streamoff>(offset));
  file.write(&byte, 1);
}

TEST_F(CheckpointTest, DamagedStepsAreRefusedNamingTheFileAndTheOthersStillRestore) {
  std::vector<Tensor> tensors;
  const std::string directory = TwoSteps("damaged", tensors);
  const std::string step = directory + "/step_00000002";
  const std::vector<std::pair<std::string, std::string>> pristine = testing::TreeContents(step);

  auto reset = [&] {
    fs::remove_all(step);
    for (const auto& [path, content] : pristine) {
      if (content == "<dir>") continue;
      fs::create_directories(fs::path(path).parent_path());
      std::ofstream(path, std::ios::binary) << content;
    }
  };
  FlipBit(step + "/device_1.bin", 5);
  std::string message = RestoreError(step);
  EXPECT_NE(message.find("device_1.bin"), std::string::npos) << message;
  EXPECT_NE(message.find("\"weight\""), std::string::npos) << message;
  EXPECT_NE(message.find("checksum xxh3:"), std::string::npos) << message;
  EXPECT_NE(message.find("manifest records xxh3:"), std::string::npos) << message;
  EXPECT_EQ(verify_checkpoint(step).size(), 1u);

  reset();
  fs::resize_file(step + "/device_3.bin", fs::file_size(step + "/device_3.bin") - 3);
  message = RestoreError(step);
  EXPECT_NE(message.find("device_3.bin is truncated"), std::string::npos) << message;

  reset();
  fs::remove(step + "/device_2.bin");
  message = RestoreError(step);
  EXPECT_NE(message.find("device_2.bin cannot be opened"), std::string::npos) << message;

  reset();
  fs::remove(step + "/manifest.json");
  message = RestoreError(step);
  EXPECT_NE(message.find("manifest.json"), std::string::npos) << message;

  reset();
  fs::resize_file(step + "/manifest.json", fs::file_size(step + "/manifest.json") / 2);
  message = RestoreError(step);
  EXPECT_NE(message.find("manifest.json is damaged"), std::string::npos) << message;

  reset();
  fs::remove(step + "/COMMITTED");
  message = RestoreError(step);
  EXPECT_NE(message.find("is incomplete"), std::string::npos) << message;

  // A manifest from a future version, committed properly: the version is what is refused.
  reset();
  {
    std::ifstream stream(step + "/manifest.json");
    nlohmann::json manifest = nlohmann::json::parse(stream);
    manifest["format_version"] = 2;
    const std::string text = manifest.dump();
    std::ofstream(step + "/manifest.json", std::ios::trunc) << text;
    std::ofstream(step + "/COMMITTED", std::ios::trunc)
        << "vkspmd-checkpoint committed\nstep 2\nmanifest "
        << io::ChecksumText(io::Xxh3(absl::string_view(text))) << "\n";
  }
  message = RestoreError(step);
  EXPECT_NE(message.find("unsupported checkpoint format v2"), std::string::npos) << message;

  // The other step is untouched by all of this.
  ExpectRestores(directory + "/step_00000001", 1);
  reset();
  ExpectRestores(step, 2);
}

TEST_F(CheckpointTest, SavingAStepThatExistsFailsAndChangesNothing) {
  std::vector<Tensor> tensors;
  const std::string directory = TwoSteps("exists", tensors);
  const auto before = testing::TreeContents(directory);
  std::string message = ThrownMessage([&] { save_checkpoint(directory, 2, StateOf(tensors)); });
  EXPECT_NE(message.find("step 2 already exists"), std::string::npos) << message;
  CheckpointManager manager(directory);
  for (bool force : {false, true}) {
    message = ThrownMessage([&] { manager.save(2, StateOf(tensors), force); });
    EXPECT_NE(message.find("already exists"), std::string::npos) << message;
  }
  EXPECT_EQ(testing::TreeContents(directory), before);
}

TEST_F(CheckpointTest, AsyncSaveWritesTheValuesAtTheCall) {
  const std::string directory = FreshDirectory("async");
  const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  std::vector<Tensor> tensors = Place({"2x2", mesh, {"dp", "tp"}}, Values(5));
  CheckpointManager manager(directory);
  ASSERT_TRUE(manager.save_async(4, StateOf(tensors)));
  for (Tensor& tensor : tensors) {
    if (tensor.dtype() == DType::kFloat32) tensor.assign(tensor * 3.0f + 1.0f);
    if (tensor.dtype() == DType::kInt32) tensor.assign(tensor + 5);
  }
  mark_step();
  manager.wait_until_finished();
  EXPECT_EQ(manager.all_steps(), std::vector<int64_t>{4});
  ExpectRestores(manager.step_path(4), 5);
}

TEST_F(CheckpointTest, AFailedAsyncWriteSurfacesOnceAndLeavesNoStep) {
  std::vector<Tensor> tensors;
  const std::string directory = TwoSteps("async_failure", tensors);
  CheckpointManager manager(directory);
  setenv("VKSPMD_CHECKPOINT_FAULT", "file.write:error", 1);
  EXPECT_TRUE(manager.save_async(3, StateOf(tensors)));
  std::string message = ThrownMessage([&] { manager.wait_until_finished(); });
  unsetenv("VKSPMD_CHECKPOINT_FAULT");
  EXPECT_NE(message.find("injected I/O error"), std::string::npos) << message;
  EXPECT_EQ(ThrownMessage([&] { manager.wait_until_finished(); }), "no error");
  EXPECT_EQ(manager.all_steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_EQ(testing::ListNames(directory),
            (std::vector<std::string>{"step_00000001", "step_00000002"}));
  ExpectRestores(manager.step_path(1), 1);
  ExpectRestores(manager.step_path(2), 2);
  // The failure is collected by the next save too (here: an error at the next save_async).
  setenv("VKSPMD_CHECKPOINT_FAULT", "step.rename:error", 1);
  EXPECT_TRUE(manager.save_async(3, StateOf(tensors)));
  message = ThrownMessage([&] { manager.save(4, StateOf(tensors)); });
  unsetenv("VKSPMD_CHECKPOINT_FAULT");
  EXPECT_NE(message.find("step.rename"), std::string::npos) << message;
  EXPECT_TRUE(manager.save(4, StateOf(tensors)));
  EXPECT_EQ(manager.all_steps(), (std::vector<int64_t>{1, 2, 4}));
}

TEST_F(CheckpointTest, KeepsTheNewestStepsAndEveryKeepPeriod) {
  Tensor tensor = from_host(DistinctValues({3}, DType::kFloat32, 0));
  for (const auto& [period, expected] :
       {std::pair<int64_t, std::vector<int64_t>>{0, {7, 8, 9}}, {4, {0, 4, 7, 8, 9}}}) {
    const std::string directory = FreshDirectory(absl::StrCat("keep", period));
    CheckpointManager manager(directory, {.max_to_keep = 3, .keep_period = period});
    for (int64_t step = 0; step < 10; ++step) {
      EXPECT_TRUE(manager.save(step, CheckpointState().add("t", tensor)));
    }
    EXPECT_EQ(manager.all_steps(), expected);
    EXPECT_EQ(testing::ListNames(directory).size(), expected.size());
    EXPECT_EQ(manager.latest_step(), 9);
  }
}

TEST_F(CheckpointTest, SaveIntervalDecidesAndForceOverrides) {
  const std::string directory = FreshDirectory("interval");
  Tensor tensor = from_host(DistinctValues({3}, DType::kFloat32, 0));
  CheckpointManager manager(directory, {.save_interval = 4});
  std::vector<int64_t> saved;
  for (int64_t step = 0; step < 10; ++step) {
    if (manager.save(step, CheckpointState().add("t", tensor), /*force=*/step == 5)) {
      saved.push_back(step);
    }
  }
  EXPECT_EQ(saved, (std::vector<int64_t>{0, 4, 5, 8}));
  EXPECT_EQ(manager.all_steps(), saved);
}

TEST_F(CheckpointTest, StaleTemporariesAreNeverListedAndCleanedAtTheNextStart) {
  std::vector<Tensor> tensors;
  const std::string directory = TwoSteps("stale", tensors);
  // A dead writer's temporary step (pid 999999 is above Linux's default pid_max), an unfinished
  // deletion, and a step directory without its commit marker.
  fs::create_directories(directory + "/step_00000003.tmp-999999-0badf00d/x");
  fs::create_directories(directory + "/.deleting-step_00000001-999999-00000000");
  fs::create_directories(directory + "/step_00000005");
  {
    CheckpointManager reader(directory, {.read_only = true});
    EXPECT_EQ(reader.all_steps(), (std::vector<int64_t>{1, 2}));
  }
  CheckpointManager manager(directory);
  EXPECT_EQ(testing::ListNames(directory),
            (std::vector<std::string>{"step_00000001", "step_00000002", "step_00000005"}));
  EXPECT_EQ(manager.all_steps(), (std::vector<int64_t>{1, 2}));
  EXPECT_NE(RestoreError(directory + "/step_00000005").find("incomplete"), std::string::npos);
}

TEST_F(CheckpointTest, RestoreRefusesMissingTensorsAndOtherShapesChangingNothing) {
  std::vector<Tensor> tensors;
  const std::string directory = TwoSteps("mismatch", tensors);
  Tensor extra = zeros({2});
  std::vector<Tensor> targets = Place({"host", std::nullopt, {}}, Values(999));
  CheckpointState state = StateOf(targets);
  state.add("missing", extra);
  std::string message =
      ThrownMessage([&] { restore_checkpoint(directory + "/step_00000001", state); });
  EXPECT_NE(message.find("has no tensor \"missing\""), std::string::npos) << message;
  EXPECT_EQ(BitwiseDifference(targets[0].to_host(), Values(999)[0]), "");

  CheckpointState wrong;
  Tensor wrong_shape = zeros({10, 7});
  wrong.add("weight", wrong_shape);
  message = ThrownMessage([&] { restore_checkpoint(directory + "/step_00000001", wrong); });
  EXPECT_NE(message.find("\"weight\" is f32[10,7]"), std::string::npos) << message;
}

TEST_F(CheckpointTest, IntegersRngDataPositionAndMetadataRoundTrip) {
  const std::string directory = FreshDirectory("extras");
  std::vector<int64_t> counts = {3, 1, 4};
  Tensor tensor = from_host(DistinctValues({2}, DType::kFloat32, 0));
  CheckpointState state;
  state.add("t", tensor);
  state.integers.push_back(
      {"counts", [&] { return counts; }, [&](const std::vector<int64_t>& v) { counts = v; }});
  state.data_position = 42;
  state.metadata = {{"model", "gpt"}, {"note", "ünïcode"}};
  manual_seed(11);
  (void)rand({5});
  const RngState rng = get_rng_state();
  save_checkpoint(directory, 0, state);
  counts = {0, 0, 0};
  state.data_position = 0;
  state.metadata.clear();
  manual_seed(12);
  restore_checkpoint(directory + "/step_00000000", state);
  EXPECT_EQ(counts, (std::vector<int64_t>{3, 1, 4}));
  EXPECT_EQ(state.data_position, 42);
  EXPECT_EQ(state.metadata.at("note"), "ünïcode");
  EXPECT_EQ(get_rng_state(), rng);
}

// Two AdamW steps, save, a third step; restore and take the third step again: the same bits.
TEST_F(CheckpointTest, OptimizerStateResumesBitwise) {
  const std::string directory = FreshDirectory("optimizer");
  const Mesh mesh({2}, {}, {"x"});
  Tensor weight = from_host(DistinctValues({6, 5}, DType::kFloat32, 3));
  mark_sharding(weight, mesh, {"x", None});
  optim::AdamW optimizer({weight}, 0.01);
  mark_step();
  auto train_step = [&](int64_t step) {
    Tensor target = from_host(DistinctValues({6, 5}, DType::kFloat32, 50 + step));
    Tensor loss = ((weight - target) * (weight - target)).sum();
    optimizer.step(grad(loss, {weight}));
    mark_step();
  };
  CheckpointState state;
  state.add("w", weight).add_optimizer(optimizer);
  train_step(0);
  train_step(1);
  save_checkpoint(directory, 2, state);
  train_step(2);
  const HostTensor continued = weight.to_host();
  train_step(3);
  restore_checkpoint(directory + "/step_00000002", state);
  EXPECT_EQ(optimizer.step_count(0), 2);
  train_step(2);
  EXPECT_EQ(BitwiseDifference(weight.to_host(), continued), "");
  EXPECT_EQ(optimizer.step_count(0), 3);
}

// A profiler trace shows the checkpoint: staging on the caller's track, the write on the
// background writer's, and the commit as an instant naming the step.
TEST_F(CheckpointTest, TheTraceShowsStagingWritingAndTheCommit) {
  const std::string directory = FreshDirectory("traced");
  const std::string trace = directory + "/trace.json";
  const Mesh mesh({2}, {}, {"x"});
  std::vector<Tensor> tensors = Place({"2", mesh, {"x", None}}, Values(3));
  CheckpointManager manager(directory + "/ckpt");
  profiler::start_trace(trace);
  manager.save_async(7, StateOf(tensors));
  manager.wait_until_finished();
  profiler::stop_trace();
  std::ifstream stream(trace);
  const nlohmann::json json = nlohmann::json::parse(stream);
  std::map<std::string, nlohmann::json> found;
  std::map<int64_t, std::string> threads;
  for (const nlohmann::json& event : json["traceEvents"]) {
    if (event["ph"] == "M" && event["name"] == "thread_name") {
      threads[event["tid"].get<int64_t>()] = event["args"]["name"];
    }
    if (event.value("cat", "") == "checkpoint") found[event["name"]] = event;
  }
  ASSERT_TRUE(found.contains("checkpoint stage"));
  ASSERT_TRUE(found.contains("checkpoint write"));
  ASSERT_TRUE(found.contains("checkpoint commit"));
  EXPECT_EQ(found["checkpoint commit"]["ph"], "i");
  EXPECT_EQ(found["checkpoint commit"]["args"]["step"], 7);
  EXPECT_EQ(threads[found["checkpoint write"]["tid"].get<int64_t>()], "checkpoint writer");
  EXPECT_NE(found["checkpoint stage"]["tid"], found["checkpoint write"]["tid"]);
  EXPECT_GE(found["checkpoint commit"]["ts"].get<double>(),
            found["checkpoint stage"]["ts"].get<double>());
}

// The exported file, read by numpy alone (tests/io/safetensors_check.py), holds every tensor equal
// to the value gathered from the devices.
TEST_F(CheckpointTest, ExportedSafetensorsHoldTheGatheredValues) {
  if (!testing::PythonHasNumpy(VKSPMD_PYTHON)) GTEST_SKIP() << VKSPMD_PYTHON << " has no numpy";
  const std::string directory = FreshDirectory("export");
  const std::string expected = FreshDirectory("export_npy");
  const Mesh mesh({2, 2}, {}, {"dp", "tp"});
  std::vector<Tensor> tensors = Place({"2x2", mesh, {"tp", "dp"}}, Values(21));
  CheckpointState state = StateOf(tensors);
  save_checkpoint(directory, 8, state);
  for (const auto& [name, tensor] : state.tensors) tensor.to_npy(expected + "/" + name + ".npy");
  const std::string file = directory + "/step8.safetensors";
  export_safetensors(directory + "/step_00000008", file);
  const std::string command =
      absl::StrCat(VKSPMD_PYTHON, " ", VKSPMD_SAFETENSORS_CHECK, " ", file, " ", expected);
  EXPECT_EQ(std::system(command.c_str()), 0) << command;
  // The check can fail: a value that differs from the file is found.
  from_host(Values(22)[0]).to_npy(expected + "/weight.npy");
  EXPECT_NE(std::system(command.c_str()), 0) << command;
}

}  // namespace
}  // namespace vkspmd
