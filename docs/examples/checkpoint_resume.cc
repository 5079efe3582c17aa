// docs/checkpoints.md's example: a small MLP trained data-parallel on 2 devices with a
// CheckpointManager saving every 5 steps (keeping 2); then a second model sharded FSDP-style over
// 4 devices restores the latest step (resharded on load) and must hold the same parameters.
#include <vkspmd/vkspmd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

int main() {
  try {
    const std::string directory =
        (std::filesystem::temp_directory_path() / "vkspmd_checkpoint_example").string();
    std::filesystem::remove_all(directory);

    vkspmd::manual_seed(0);
    vkspmd::nn::MlpRegressor model(8, 32, 1);
    vkspmd::nn::apply_strategy(model, vkspmd::nn::strategy_mesh("dp", {2}), "dp");
    vkspmd::optim::AdamW optimizer(model.parameters(), 1e-2);
    vkspmd::mark_step();

    vkspmd::CheckpointManager manager(directory, {.save_interval = 5, .max_to_keep = 2});
    vkspmd::CheckpointState state;
    state.add_module(model).add_optimizer(optimizer);
    vkspmd::Tensor x = model.shard_input(vkspmd::randn({16, 8}));
    vkspmd::Tensor y = model.shard_input(vkspmd::randn({16, 1}));
    for (int64_t step = 1; step <= 12; ++step) {
      vkspmd::Tensor loss = model.loss(x, y);
      optimizer.step(vkspmd::grad(loss, model.parameters()));
      vkspmd::mark_step();
      state.data_position = step;
      if (manager.save(step, state)) std::cout << "saved step " << step << "\n";
    }
    std::cout << "committed steps:";
    for (int64_t step : manager.all_steps()) std::cout << " " << step;
    std::cout << "\n";

    // Another mesh and strategy: the saved shards are narrowed into the new ones on load.
    vkspmd::nn::MlpRegressor restored(8, 32, 1);
    vkspmd::nn::apply_strategy(restored, vkspmd::nn::strategy_mesh("fsdp", {4}), "fsdp");
    vkspmd::optim::AdamW restored_optimizer(restored.parameters(), 1e-2);
    vkspmd::CheckpointState target;
    target.add_module(restored).add_optimizer(restored_optimizer);
    manager.restore(*manager.latest_step(), target);
    std::cout << "restored step " << target.data_position << " onto "
              << vkspmd::sharding_spec(restored.parameters()[0]) << "\n";
    // Step 10 was saved; the model went on to step 12, so compare with a fresh restore of it
    // into the original layout instead.
    vkspmd::CheckpointState again;
    again.add_module(model);
    manager.restore(10, again);
    const auto original = model.named_parameters();
    const auto copy = restored.named_parameters();
    for (size_t i = 0; i < original.size(); ++i) {
      if (original[i].second.to_vector<float>() != copy[i].second.to_vector<float>()) {
        std::cerr << original[i].first << " differs\n";
        return 1;
      }
    }
    std::cout << "the parameters match bitwise on both meshes\n";
    return 0;
  } catch (const vkspmd::Error& error) {
    std::cerr << "checkpoint_resume: " << error.what() << "\n";
    return 1;
  }
}
