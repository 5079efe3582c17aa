// Auto-sharding on the training steps `vkspmd train` runs (tests/spmd/testdata/auto: the MLP's and
// the default transformer's step, dumped on one device): plans no worse than the hand strategies
// under the same cost model, memory limits, numerics against the unsharded step, golden plans.
#include "src/spmd/auto_sharding.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>

#include "fmt/format.h"
#include "src/ir/parser.h"
#include "src/spmd/ilp_solver.h"
#include "tests/spmd/spmd_test_util.h"

namespace vkspmd::spmd {
namespace {

const std::string kDataDir = VKSPMD_AUTO_SHARDING_DATA;

std::string ReadFile(const std::string& path) {
  std::ifstream file(path);
  std::stringstream text;
  text << file.rdbuf();
  return text.str();
}

// A test file, or its gzipped `path.gz` (gzip is part of every Debian system).
std::string ReadMaybeGzipped(const std::string& path) {
  std::string text = ReadFile(path);
  if (!text.empty()) return text;
  FILE* pipe = popen(("gzip -dc " + path + ".gz").c_str(), "r");
  if (pipe == nullptr) return "";
  char buffer[1 << 16];
  for (size_t read; (read = fread(buffer, 1, sizeof(buffer), pipe)) > 0;) text.append(buffer, read);
  pclose(pipe);
  return text;
}

// `f64`: the step with every f32 made f64, for comparisons that float rounding must not blur.
// The 64-layer step (4.4 MB of text) is kept gzipped.
std::string ReadStepText(const std::string& model) {
  return ReadMaybeGzipped(kDataDir + "/" + model + "_step.hlo");
}

std::unique_ptr<ir::Module> LoadStep(const std::string& model, bool f64 = false) {
  std::string text = ReadStepText(model);
  for (size_t at = text.find("f32"); f64 && at != std::string::npos; at = text.find("f32", at)) {
    text.replace(at, 3, "f64");
  }
  EXPECT_FALSE(text.empty()) << model;
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return std::move(module).value();
}

Mesh MeshOf(const std::string& shape) { return Mesh::Parse(shape).value(); }

// Entry parameters that no output aliases: the step's batch (x, y or tokens, targets).
std::vector<bool> BatchInputs(const ir::Module& module) {
  std::vector<bool> inputs(module.entry()->parameters().size(), true);
  for (const ir::InputOutputAlias& alias : module.input_output_aliases()) {
    inputs[alias.parameter_number] = false;
  }
  return inputs;
}

// The hand strategies as nn::data_parallel and nn::fsdp_v2 mark them, over every mesh axis: the
// batch inputs split on dim 0; fsdp also splits each state parameter's largest dim that the
// mesh divides. Returns the propagated shardings of the annotated step.
ShardingMap HandShardings(ir::Module& module, const Mesh& mesh, bool fsdp) {
  std::vector<int64_t> all_axes;
  for (int64_t a = 0; a < mesh.axis_count(); ++a) all_axes.push_back(a);
  const std::vector<bool> inputs = BatchInputs(module);
  const auto& parameters = module.entry()->parameters();
  for (size_t p = 0; p < parameters.size(); ++p) {
    const ir::Shape& shape = parameters[p]->shape();
    AxisSharding sharding = AxisSharding::Replicated(shape.rank());
    int64_t best = -1;
    for (int64_t d = 0; d < shape.rank(); ++d) {
      if (shape.dimension(d) % mesh.device_count() != 0) continue;
      if (inputs[p] ? d == 0 : (fsdp && (best < 0 || shape.dimension(d) > shape.dimension(best)))) {
        best = d;
      }
    }
    if (best >= 0) sharding.dims[best] = all_axes;
    parameters[p]->set_sharding(ToHloSharding(sharding, mesh));
  }
  absl::StatusOr<PropagationResult> propagated = PropagateShardings(module, mesh);
  EXPECT_TRUE(propagated.ok()) << propagated.status();
  return propagated->shardings;
}

double Seconds(double value) { return value * 1e3; }  // printed in ms

TEST(AutoShardingCostTest, CollectiveAndReshardTimesHaveHandValues) {
  const Mesh mesh = MeshOf("2x2");
  const CostModel model = CostModel::Default(mesh);
  const ir::Shape shape(ir::DType::kF32, {8, 8});  // 256 bytes
  AxisSharding rows = AxisSharding::Replicated(2), columns = AxisSharding::Replicated(2);
  rows.dims[0] = {0};
  columns.dims[1] = {0};
  // Gathering axis 0 (2 devices) moves half the 256-byte result; moving it is an all-to-all of
  // half of the 128-byte shard; splitting further is a local slice.
  EXPECT_DOUBLE_EQ(model.Reshard(shape, rows, AxisSharding::Replicated(2), mesh),
                   20e-6 + 0.5 * 256 / 2e9);
  EXPECT_DOUBLE_EQ(model.Reshard(shape, rows, columns, mesh), 20e-6 + 0.5 * 128 / 2e9);
  EXPECT_DOUBLE_EQ(model.Reshard(shape, AxisSharding::Replicated(2), rows, mesh), 0);
  EXPECT_DOUBLE_EQ(model.Collective(CollectiveKind::kAllReduce, 1, 1000, mesh),
                   20e-6 + 2 * 0.5 * 1000 / 2e9);
  // One of a bucket of all-reduces (a step's gradients) pays its bytes; the bucket, the alpha.
  EXPECT_DOUBLE_EQ(model.Collective(CollectiveKind::kAllReduce, 1, 1000, mesh, true),
                   2 * 0.5 * 1000 / 2e9);
  absl::StatusOr<CostModel> parsed = CostModel::Parse(model.Serialize(mesh), mesh);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->Serialize(mesh), model.Serialize(mesh));
  EXPECT_FALSE(CostModel::Parse("axis 0 all-reduce alpha_s=1\n", mesh).ok());
  EXPECT_FALSE(CostModel::Parse("flops_per_second=1\n", mesh).ok());  // axes missing
  // A kernel: dispatches, a dot's flops and other ops' elements each at their own rate.
  CostModel measured = model;
  measured.kernel_seconds = 1e-5;
  measured.flops_per_second = 1e10;
  measured.element_ops_per_second = 1e9;
  measured.run_seconds = 3e-4;
  EXPECT_DOUBLE_EQ(measured.Kernel(1e9, 0, 2, 5e8), 2e-5 + 0.1 + 0.5);
  parsed = CostModel::Parse(measured.Serialize(mesh), mesh);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->element_ops_per_second, 1e9);
  EXPECT_EQ(parsed->run_seconds, 3e-4);
  // A file from before the element rate: element ops run at the flop rate, runs cost nothing.
  std::string old_format = measured.Serialize(mesh);
  for (const char* line : {"element_ops_per_second=1e+09\n", "run_seconds=0.0003\n"}) {
    ASSERT_NE(old_format.find(line), std::string::npos) << old_format;
    old_format.erase(old_format.find(line), std::string(line).size());
  }
  parsed = CostModel::Parse(old_format, mesh);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  EXPECT_EQ(parsed->element_ops_per_second, 1e10);
  EXPECT_EQ(parsed->run_seconds, 0);
}

TEST(IlpSolverTest, KnapsackHasTheHandOptimum) {
  // Values 10, 13, 7 with weights 3, 4, 2 and capacity 5: items 0 and 2 (17) beat item 1 (13).
  IlpProblem problem;
  const double values[] = {10, 13, 7}, weights[] = {3, 4, 2};
  std::vector<IlpProblem::Term> capacity;
  for (int i = 0; i < 3; ++i)
    capacity.push_back({problem.AddVariable(-values[i], true), weights[i]});
  problem.AddRow(capacity, -INFINITY, 5);
  absl::StatusOr<IlpProblem::Solution> solution = problem.Solve(5);
  ASSERT_TRUE(solution.ok()) << solution.status();
  EXPECT_DOUBLE_EQ(solution->objective, -17);
  EXPECT_EQ(solution->values, (std::vector<double>{1, 0, 1}));
  EXPECT_TRUE(solution->optimal);
  problem.AddRow({{0, 1}, {1, 1}, {2, 1}}, 4, INFINITY);  // cannot take 4 of 3 items
  EXPECT_EQ(problem.Solve(5).status().code(), absl::StatusCode::kFailedPrecondition);
}

// On 2, 4 and 2x2 the ILP's plan costs no more than data parallelism and FSDP cost under the same
// model (their propagated shardings are plans the ILP could have chosen); the figures are printed.
TEST(AutoShardingTest, NoWorseThanHandStrategies) {
  for (const std::string model_name : {"mlp", "transformer"}) {
    for (const std::string shape : {"2", "4", "2x2"}) {
      const Mesh mesh = MeshOf(shape);
      const CostModel model = CostModel::Default(mesh);
      std::unique_ptr<ir::Module> step = LoadStep(model_name);
      absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, model);
      ASSERT_TRUE(plan.ok()) << plan.status();
      std::string line = fmt::format(
          "{} on {}: auto {:.4f} ms (solved in {:.3f} s, {} groups, {} "
          "variables)",
          model_name, shape, Seconds(plan->cost()), plan->solve_seconds, plan->choice_groups,
          plan->variables);
      for (bool fsdp : {false, true}) {
        std::unique_ptr<ir::Module> annotated = LoadStep(model_name);
        const ShardingMap hand = HandShardings(*annotated, mesh, fsdp);
        absl::StatusOr<AutoShardingPlan> hand_plan = CostOfShardings(*annotated, mesh, model, hand);
        ASSERT_TRUE(hand_plan.ok()) << hand_plan.status();
        line += fmt::format(", {} {:.4f} ms", fsdp ? "fsdp" : "dp", Seconds(hand_plan->cost()));
        EXPECT_LE(plan->cost(), hand_plan->cost() * (1 + 1e-9))
            << line << " " << plan->cost() - hand_plan->cost();
      }
      std::printf("%s\n", line.c_str());
    }
  }
}

// The hand strategies as `vkspmd train --strategy S --mesh M` runs them (VKSPMD_DUMP_DIR's
// `*-gspmd/module.hlo` of the MLP's and the default transformer's first step): the step is the
// same for every strategy and mesh (<model>_hand_step.hlo) but for its annotations, kept per
// strategy and mesh in <model>_hand_shardings.txt.gz ("dp+tp 2x2 %dot.3 {devices=...}"). On
// "2x2" train runs dp, tp and fsdp over the 4 devices in a row: the "4" annotations, which name
// the same devices' tiles on the 2x2 mesh.
const char* const kHandStrategies[] = {"dp", "tp", "fsdp", "dp+tp"};

ShardingMap TrainHandShardings(ir::Module& module, const std::string& model_name,
                               const std::string& strategy, const std::string& mesh_shape,
                               const Mesh& mesh) {
  const std::string dumped = mesh_shape == "2x2" && strategy != "dp+tp" ? "4" : mesh_shape;
  std::istringstream lines(ReadMaybeGzipped(kDataDir + "/" + model_name + "_hand_shardings.txt"));
  std::map<std::string, ir::Instruction*> by_name;
  for (const auto& instruction : module.entry()->instructions()) {
    by_name["%" + instruction->name()] = instruction.get();
  }
  int64_t annotated = 0;
  for (std::string line; std::getline(lines, line);) {
    std::istringstream fields(line);
    std::string line_strategy, line_mesh, name, sharding;
    fields >> line_strategy >> line_mesh >> name;
    std::getline(fields >> std::ws, sharding);
    if (line_strategy != strategy || line_mesh != dumped) continue;
    absl::StatusOr<ir::Sharding> parsed = ir::ParseSharding(sharding);
    EXPECT_TRUE(parsed.ok() && by_name.contains(name)) << line;
    if (!parsed.ok() || !by_name.contains(name)) continue;
    by_name[name]->set_sharding(*parsed);
    ++annotated;
  }
  EXPECT_GT(annotated, 0) << model_name << " " << strategy << " " << mesh_shape;
  absl::StatusOr<PropagationResult> propagated = PropagateShardings(module, mesh);
  EXPECT_TRUE(propagated.ok()) << propagated.status();
  return propagated.ok() ? propagated->shardings : ShardingMap();
}

// Whether a sharding splits a dim its axes do not divide (shards padded at the end).
bool HasPaddedShards(const ShardingMap& shardings, const Mesh& mesh) {
  for (const auto& [instruction, leaves] : shardings) {
    if (instruction->shape().IsTuple()) continue;
    for (size_t d = 0; d < leaves.at(0).dims.size(); ++d) {
      if (instruction->shape().dimension(d) % mesh.SizeOf(leaves[0].dims[d]) != 0) return true;
    }
  }
  return false;
}

// The check in the model: on 2, 4 and 2x2 the ILP's plan of the step train runs costs no
// more than each of train's hand strategies (dp, tp, fsdp, dp+tp) under the defaults.
TEST(AutoShardingTest, NoWorseThanTrainsHandStrategies) {
  for (const std::string model_name : {"mlp", "transformer"}) {
    for (const std::string shape : {"2", "4", "2x2"}) {
      const Mesh mesh = MeshOf(shape);
      const CostModel model = CostModel::Default(mesh);
      std::unique_ptr<ir::Module> step = LoadStep(model_name + "_hand");
      absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, model);
      ASSERT_TRUE(plan.ok()) << plan.status();
      std::string line = fmt::format("{} on {}: auto {:.4f} ms (solved in {:.3f} s)", model_name,
                                     shape, Seconds(plan->cost()), plan->solve_seconds);
      for (const std::string strategy : kHandStrategies) {
        std::unique_ptr<ir::Module> annotated = LoadStep(model_name + "_hand");
        const ShardingMap hand = TrainHandShardings(*annotated, model_name, strategy, shape, mesh);
        absl::StatusOr<AutoShardingPlan> hand_plan = CostOfShardings(*annotated, mesh, model, hand);
        ASSERT_TRUE(hand_plan.ok()) << hand_plan.status();
        line += fmt::format(", {} {:.4f}", strategy, Seconds(hand_plan->cost()));
        EXPECT_LE(plan->cost(), hand_plan->cost() * (1 + 1e-9))
            << line << " " << plan->cost() - hand_plan->cost();
        // The hand plan is a point of the ILP, which costs it as the model does; but for padded
        // shards (fsdp splits the MLP's f32[1] bias 2 ways), which auto plans never have.
        absl::StatusOr<AutoShardingPlan> in_space =
            CostInChoiceSpace(*annotated, mesh, model, hand);
        if (HasPaddedShards(hand, mesh)) {
          EXPECT_EQ(in_space.status().code(), absl::StatusCode::kNotFound) << in_space.status();
          continue;
        }
        EXPECT_TRUE(in_space.ok()) << strategy << " on " << shape << ": " << in_space.status();
        if (!in_space.ok()) continue;
        EXPECT_NEAR(in_space->cost(), hand_plan->cost(), hand_plan->cost() * 1e-9)
            << model_name << " " << strategy << " on " << shape;
      }
      std::printf("%s\n", line.c_str());
    }
  }
}

// A limit below what data parallelism needs (its replicated parameters and optimizer state): the
// plan shards state parameters and meets the limit at the checked points.
TEST(AutoShardingTest, MemoryLimitBelowDataParallelShardsParameters) {
  const Mesh mesh = MeshOf("4");
  const CostModel model = CostModel::Default(mesh);
  std::unique_ptr<ir::Module> annotated = LoadStep("transformer");
  const ShardingMap dp = HandShardings(*annotated, mesh, /*fsdp=*/false);
  absl::StatusOr<AutoShardingPlan> dp_plan = CostOfShardings(*annotated, mesh, model, dp);
  ASSERT_TRUE(dp_plan.ok()) << dp_plan.status();
  // Half the replicated state (weights and AdamW moments, the aliased parameters) less than data
  // parallelism needs: only sharding state reaches it, activations are split 4 ways already.
  int64_t state_bytes = 0;
  const std::vector<bool> batch = BatchInputs(*annotated);
  for (size_t p = 0; p < batch.size(); ++p) {
    if (!batch[p]) state_bytes += ByteSize(annotated->entry()->parameters()[p]->shape());
  }
  AutoShardingOptions options;
  options.memory_limit_bytes = dp_plan->peak_memory_bytes - state_bytes / 2;
  EXPECT_EQ(CostOfShardings(*annotated, mesh, model, dp, options).status().code(),
            absl::StatusCode::kFailedPrecondition);

  std::unique_ptr<ir::Module> step = LoadStep("transformer");
  absl::StatusOr<AutoShardingPlan> unlimited = AutoShard(*step, mesh, model);
  absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, model, options);
  ASSERT_TRUE(plan.ok()) << plan.status();
  ASSERT_TRUE(unlimited.ok()) << unlimited.status();
  int64_t sharded_state = 0;
  const std::vector<bool> inputs = BatchInputs(*step);
  for (size_t p = 0; p < inputs.size(); ++p) {
    const ir::Instruction* parameter = step->entry()->parameters()[p];
    if (!inputs[p] && !plan->shardings.at(parameter)[0].IsReplicated()) ++sharded_state;
  }
  std::printf(
      "dp peak %ld bytes, limit %ld, plan peak %ld (unlimited %ld), %ld state parameters "
      "sharded, cost %.4f ms vs %.4f unlimited\n",
      static_cast<long>(dp_plan->peak_memory_bytes), static_cast<long>(*options.memory_limit_bytes),
      static_cast<long>(plan->peak_memory_bytes), static_cast<long>(unlimited->peak_memory_bytes),
      static_cast<long>(sharded_state), Seconds(plan->cost()), Seconds(unlimited->cost()));
  EXPECT_GT(sharded_state, 0);
  EXPECT_LE(plan->peak_memory_bytes, *options.memory_limit_bytes);
  EXPECT_GE(plan->cost(), unlimited->cost() * (1 - 1e-9));
}

// What `vkspmd partition --auto/--cost` prints as the compute by kind adds up to the modelled
// compute: every op's compute goes to exactly one of dots, other kernels and fused ops, and the
// model's run_seconds (0.25 ms here, dispatches 10 us, so that no part is zero) to both.
TEST(AutoShardingTest, ComputeByKindAddsUpToTheCompute) {
  for (const std::string model_name : {"mlp", "transformer"}) {
    for (const std::string shape : {"2", "2x2"}) {
      const Mesh mesh = MeshOf(shape);
      CostModel model = CostModel::Default(mesh);
      model.run_seconds = 2.5e-4;
      model.kernel_seconds = 1e-5;
      std::unique_ptr<ir::Module> step = LoadStep(model_name);
      absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, model);
      ASSERT_TRUE(plan.ok()) << plan.status();
      std::unique_ptr<ir::Module> annotated = LoadStep(model_name);
      const ShardingMap dp = HandShardings(*annotated, mesh, /*fsdp=*/false);
      absl::StatusOr<AutoShardingPlan> dp_plan = CostOfShardings(*annotated, mesh, model, dp);
      ASSERT_TRUE(dp_plan.ok()) << dp_plan.status();
      for (const AutoShardingPlan* costed : {&*plan, &*dp_plan}) {
        const std::string what =
            fmt::format("{} on {} ({})", model_name, shape, costed == &*plan ? "auto" : "dp");
        EXPECT_GT(costed->compute_dots, 0) << what;
        EXPECT_GT(costed->compute_kernels, 0) << what;
        EXPECT_GT(costed->compute_fused, 0) << what;
        EXPECT_EQ(costed->compute_run, 2.5e-4) << what;
        EXPECT_NEAR(costed->compute_dots + costed->compute_kernels + costed->compute_fused +
                        costed->compute_run,
                    costed->compute, costed->compute * 1e-9)
            << what;
        EXPECT_NE(costed->ComputeByKind().find(", run 0.250\n"), std::string::npos)
            << what << ": " << costed->ComputeByKind();
      }
    }
  }
}

// Arguments in the step's domain: positive floats (AdamW's second moments, learning rates),
// the random integers as they come.
std::vector<ir::Literal> StepArguments(const ir::Module& module) {
  std::vector<ir::Literal> arguments = testing::RandomArguments(*module.entry(), 3);
  for (ir::Literal& argument : arguments) {
    if (argument.shape().dtype() != ir::DType::kF64) continue;
    for (int64_t i = 0; i < argument.ElementCount(); ++i) {
      argument.SetFromDouble(i, std::abs(argument.GetAsDouble(i)) + 0.1);
    }
  }
  return arguments;
}

// In f64 (the reference evaluates f64): these random weights make the step ill-conditioned
// (in f32 a plan splitting d_model sums differs by up to 7e-4 from the unsharded step, where data
// parallelism, splitting only the batch, differs by 2e-7), so float32 rounding would hide
// nothing smaller than that; in f64 both are rounding noise (~1e-13) and a wrong element is not.
TEST(AutoShardingTest, AutoShardedStepsEqualTheUnshardedStep) {
  for (const std::string model_name : {"mlp", "transformer"}) {
    for (const std::string shape : {"2", "4", "2x2"}) {
      const Mesh mesh = MeshOf(shape);
      std::unique_ptr<ir::Module> step = LoadStep(model_name, /*f64=*/true);
      absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, CostModel::Default(mesh));
      ASSERT_TRUE(plan.ok()) << plan.status();
      AnnotateModule(*step, plan->shardings, mesh);
      const std::vector<ir::Literal> arguments = StepArguments(*step);
      absl::StatusOr<testing::EquivalenceOutcome> outcome =
          testing::RunEquivalence(*step, mesh, 1, nullptr, &arguments);
      ASSERT_TRUE(outcome.ok()) << model_name << " on " << shape << ": " << outcome.status();
      EXPECT_LT(outcome->difference, 1e-10) << model_name << " on " << shape;
      std::printf("%s on %s: the auto-sharded step differs by %.3g (f64)\n", model_name.c_str(),
                  shape.c_str(), outcome->difference);
    }
  }
}

double WallSeconds(std::chrono::steady_clock::time_point start) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

// The time limit bounds the whole solve (issue 22: it used to bound each ILP, so the transformer
// on 2x2, 16 rounds of two orders with descent, took 1.4 s of GLPK under a 0.5 s limit). Measured
// on the shared 2-core machine: 0.5 s limit, 0.50-0.6 s wall (the round running at the deadline
// builds its choices before stopping); 1 s of slack keeps the check robust under load.
TEST(AutoShardingTest, TimeLimitBoundsTheWholeSolve) {
  const Mesh mesh = MeshOf("2x2");
  const CostModel model = CostModel::Default(mesh);
  std::unique_ptr<ir::Module> step = LoadStep("transformer");
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<AutoShardingPlan> unlimited = AutoShard(*step, mesh, model);
  const double unlimited_wall = WallSeconds(start);
  ASSERT_TRUE(unlimited.ok()) << unlimited.status();
  EXPECT_FALSE(unlimited->stopped_at_time_limit);
  EXPECT_EQ(unlimited->greedy_groups, 0);

  AutoShardingOptions options;
  options.time_limit_seconds = 0.5;
  start = std::chrono::steady_clock::now();
  absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, model, options);
  const double wall = WallSeconds(start);
  ASSERT_TRUE(plan.ok()) << plan.status();
  std::printf(
      "transformer on 2x2: %.3f s wall under a 0.5 s limit (%.3f s of GLPK, %s), %.3f s without "
      "(%.3f s of GLPK); cost %.4f ms vs %.4f\n",
      wall, plan->solve_seconds, plan->stopped_at_time_limit ? "stopped" : "not stopped",
      unlimited_wall, unlimited->solve_seconds, Seconds(plan->cost()), Seconds(unlimited->cost()));
  EXPECT_LE(wall, options.time_limit_seconds + 1.0);
  EXPECT_LE(plan->solve_seconds, options.time_limit_seconds + 0.1);
  if (unlimited_wall > 2 * options.time_limit_seconds) {
    EXPECT_TRUE(plan->stopped_at_time_limit);
    EXPECT_FALSE(plan->optimal);
  }
  EXPECT_EQ(plan->shardings.size(), unlimited->shardings.size());
}

// A chain of `layers` dots with a weight each, then tanh: thousands of instructions whose choices
// take a measurable time to build while the exact reduction leaves GLPK nothing to solve.
std::unique_ptr<ir::Module> DotChain(int64_t layers) {
  std::string text = "HloModule chain\n\nENTRY main {\n  %x = f32[8,16] parameter(0)\n";
  std::string h = "%x";
  for (int64_t i = 0; i < layers; ++i) {
    text += fmt::format(
        "  %w{0} = f32[16,16] parameter({1})\n  %d{0} = f32[8,16] dot({2}, %w{0}), "
        "lhs_contracting_dims={{1}}, rhs_contracting_dims={{0}}\n  %t{0} = f32[8,16] "
        "tanh(%d{0})\n",
        i, i + 1, h);
    h = fmt::format("%t{}", i);
  }
  text += fmt::format("  ROOT %r = f32[8,16] copy({})\n}}\n", h);
  absl::StatusOr<std::unique_ptr<ir::Module>> module = ir::ParseAndVerifyModule(text);
  EXPECT_TRUE(module.ok()) << module.status();
  return std::move(module).value();
}

// A round cannot stop while it builds its choices, so none may start with less time left than
// a round's building took. The reverse order's first round did (it checked only that the limit
// had not passed) and ran up to one build past the limit (1.5 s on the 64-layer step). On the
// chain each order is 4 rounds of about the same time (2 axes, then one descent pass that lowers
// nothing), so an unlimited solve is 8 rounds of T/8. Under limits of 4.3-4.9 rounds the first
// order may end with less than a round left (the rounds vary by ~25% on the shared machine):
// the reverse order's round then ran past the limit. Measured on the shared 2-core machine: a
// round 0.35 s; walls 1.3-1.7 s under limits of 1.5-1.9 s; before the fix, walls 0.1-0.3 s past
// the limit in 2 of 3 runs (so this check catches a regression most of the time, not always).
TEST(AutoShardingTest, NoRoundStartsWithLessTimeLeftThanItsBuilding) {
  const Mesh mesh = MeshOf("2x2");
  const CostModel model = CostModel::Default(mesh);
  std::unique_ptr<ir::Module> chain = DotChain(4000);
  auto start = std::chrono::steady_clock::now();
  absl::StatusOr<AutoShardingPlan> unlimited = AutoShard(*chain, mesh, model);
  const double round = WallSeconds(start) / 8;
  ASSERT_TRUE(unlimited.ok()) << unlimited.status();
  ASSERT_FALSE(unlimited->stopped_at_time_limit);
  for (double rounds : {4.3, 4.6, 4.9}) {
    AutoShardingOptions options;
    options.time_limit_seconds = rounds * round;
    start = std::chrono::steady_clock::now();
    absl::StatusOr<AutoShardingPlan> plan = AutoShard(*chain, mesh, model, options);
    const double wall = WallSeconds(start);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::printf("4000-layer chain on 2x2: a round %.3f s; %.3f s wall under a %.3f s limit\n",
                round, wall, options.time_limit_seconds);
    EXPECT_TRUE(plan->stopped_at_time_limit) << rounds;
    EXPECT_LE(wall, options.time_limit_seconds + 0.25 * round) << rounds;
  }
}

// A limit too small for any ILP: every group chosen greedily, a valid plan (the partitioned step
// equals the unsharded one), said so; under a memory limit, which the greedy choice ignores, an
// error naming the time limit. The greedy plan is within kGreedyWithin of the ILP's one-axis
// plan (f64 steps, default model; before the descent after the greedy choice, the transformer's
// was 7.323 ms, 1.38 times the ILP's 5.324, and the MLP's 0.0220 ms, 5.6 times its 0.0039).
TEST(AutoShardingTest, TooSmallTimeLimitGivesTheGreedyPlan) {
  constexpr double kGreedyWithin = 1.2;
  AutoShardingOptions options;
  options.time_limit_seconds = 1e-6;
  for (const std::string model_name : {"mlp", "transformer"}) {
    for (const std::string shape : {"2", "2x2"}) {
      const std::string what = model_name + " on " + shape;
      const Mesh mesh = MeshOf(shape);
      std::unique_ptr<ir::Module> step = LoadStep(model_name, /*f64=*/true);
      absl::StatusOr<AutoShardingPlan> plan =
          AutoShard(*step, mesh, CostModel::Default(mesh), options);
      ASSERT_TRUE(plan.ok()) << what << ": " << plan.status();
      EXPECT_TRUE(plan->stopped_at_time_limit) << what;
      EXPECT_FALSE(plan->optimal) << what;
      EXPECT_GT(plan->greedy_groups, 0) << what;
      EXPECT_EQ(plan->greedy_groups, plan->choice_groups) << what;
      EXPECT_EQ(plan->variables, 0) << what;  // no ILP was built
      AnnotateModule(*step, plan->shardings, mesh);
      const std::vector<ir::Literal> arguments = StepArguments(*step);
      absl::StatusOr<testing::EquivalenceOutcome> outcome =
          testing::RunEquivalence(*step, mesh, 1, nullptr, &arguments);
      ASSERT_TRUE(outcome.ok()) << what << ": " << outcome.status();
      EXPECT_LT(outcome->difference, 1e-10) << what;
      // The greedy round decides one mesh axis: against the ILP's plan on a 1-D mesh of 2 (the
      // same cost model per axis), solved without a limit.
      const Mesh line = MeshOf("2");
      absl::StatusOr<AutoShardingPlan> ilp =
          AutoShard(*LoadStep(model_name, /*f64=*/true), line, CostModel::Default(line));
      ASSERT_TRUE(ilp.ok()) << ilp.status();
      std::printf(
          "%s: greedy plan %.4f ms modelled (the ILP's on 2: %.4f), differs by %.3g (f64)\n",
          what.c_str(), Seconds(plan->cost()), Seconds(ilp->cost()), outcome->difference);
      EXPECT_LE(plan->cost(), kGreedyWithin * ilp->cost()) << what;
    }
  }
  const Mesh mesh = MeshOf("2");
  std::unique_ptr<ir::Module> step = LoadStep("mlp");
  options.memory_limit_bytes = int64_t{1} << 40;
  absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, CostModel::Default(mesh), options);
  EXPECT_EQ(plan.status().code(), absl::StatusCode::kDeadlineExceeded) << plan.status();
  EXPECT_NE(plan.status().message().find("no auto-sharding plan within the 1e-06 s time limit "
                                         "under the memory limit"),
            std::string::npos)
      << plan.status();
}

// A plan's golden text: every instruction's sharding, then the modelled costs; for the 64-layer
// model (43,000 instructions) how many instructions have each sharding, then the costs.
std::string GoldenText(const AutoShardingPlan& plan, const ir::Module& step, const Mesh& mesh,
                       bool summary) {
  const std::string report = plan.Report(step, mesh);
  if (!summary) return report;
  std::map<std::string, int64_t> counts;
  for (const auto& [instruction, shardings] : plan.shardings) {
    ++counts[fmt::format("{} {}", instruction->shape().rank(), shardings[0].ToString(mesh))];
  }
  std::string text = "instructions by rank and sharding:\n";
  for (const auto& [sharding, count] : counts) text += fmt::format("{} {}\n", count, sharding);
  return text + report.substr(report.rfind("modelled step:"));
}

// The plans on 2x2 under the default model, one file per model: a change in the strategies,
// the costs or the solver shows here. Regenerate with VKSPMD_UPDATE_GOLDEN=1 (the test then
// rewrites the files and passes); review the diff before committing it.
void CheckGolden(const std::string& model_name, bool summary) {
  const Mesh mesh = MeshOf("2x2");
  std::unique_ptr<ir::Module> step = LoadStep(model_name);
  absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, CostModel::Default(mesh));
  ASSERT_TRUE(plan.ok()) << plan.status();
  const std::string text = GoldenText(*plan, *step, mesh, summary);
  const std::string golden_path = kDataDir + "/" + model_name + ".2x2.plan";
  if (std::getenv("VKSPMD_UPDATE_GOLDEN") != nullptr) {
    std::ofstream(golden_path) << text;
    return;
  }
  EXPECT_EQ(text, ReadFile(golden_path))
      << golden_path << " differs: rerun with VKSPMD_UPDATE_GOLDEN=1 if the change is meant";
}

TEST(AutoShardingTest, PlansMatchTheGoldenFiles) {
  CheckGolden("mlp", false);
  CheckGolden("transformer", false);
}

// The 64-layer transformer (vkspmd train --layers 64): solved in windows of the ILP (9 of at
// most 8000 variables), which are not jointly optimal: its plan is within 5% of data parallelism
// under the model (measured: 1.2% above on 4 devices, 2.8% on 2x2), and its summary golden.
TEST(AutoShardingDeepTest, DeepTransformerPlanBeatsDataParallel) {
  CheckGolden("deep_transformer", true);
  for (const std::string shape : {"4", "2x2"}) {
    const Mesh mesh = MeshOf(shape);
    const CostModel model = CostModel::Default(mesh);
    std::unique_ptr<ir::Module> step = LoadStep("deep_transformer");
    absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, model);
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::unique_ptr<ir::Module> annotated = LoadStep("deep_transformer");
    const ShardingMap dp = HandShardings(*annotated, mesh, /*fsdp=*/false);
    absl::StatusOr<AutoShardingPlan> dp_plan = CostOfShardings(*annotated, mesh, model, dp);
    ASSERT_TRUE(dp_plan.ok()) << dp_plan.status();
    std::printf("64 layers on %s: auto %.3f ms (%ld windows, solved in %.2f s), dp %.3f ms\n",
                shape.c_str(), Seconds(plan->cost()), static_cast<long>(plan->windows),
                plan->solve_seconds, Seconds(dp_plan->cost()));
    EXPECT_LE(plan->cost(), dp_plan->cost() * 1.05);
    // Not proven optimal because of the windows, not because of the time limit.
    EXPECT_GT(plan->windows, 1) << shape;
    EXPECT_FALSE(plan->optimal) << shape;
    EXPECT_FALSE(plan->stopped_at_time_limit) << shape;
    EXPECT_EQ(plan->greedy_groups, 0) << shape;
  }
}

// The solve time of the 64-layer model on 4 devices and 2x2: the solver's own wall time, so it
// is checked alone (ctest's spmd_auto_sharding_solve_time, label `slow`, sets the variable), where
// no other test competes for the CPU.
TEST(AutoShardingDeepTest, DeepTransformerSolvesWithinTenSeconds) {
  if (std::getenv("VKSPMD_AUTO_SHARDING_SOLVE_TIME") == nullptr) {
    GTEST_SKIP() << "run by spmd_auto_sharding_solve_time (VKSPMD_AUTO_SHARDING_SOLVE_TIME=1)";
  }
  for (const std::string shape : {"4", "2x2"}) {
    const Mesh mesh = MeshOf(shape);
    std::unique_ptr<ir::Module> step = LoadStep("deep_transformer");
    absl::StatusOr<AutoShardingPlan> plan = AutoShard(*step, mesh, CostModel::Default(mesh));
    ASSERT_TRUE(plan.ok()) << plan.status();
    std::printf("64 layers on %s: solved in %.2f s\n", shape.c_str(), plan->solve_seconds);
    EXPECT_LT(plan->solve_seconds, 10.0) << shape;
  }
}

}  // namespace
}  // namespace vkspmd::spmd
