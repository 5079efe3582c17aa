// The C++ side of the Python training-loop check (test_training.py): the same loop as the test's
// Python one, call for call (a small transformer, fsdp_v2 over 2 devices unless "plain", AdamW,
// tokens and targets from .npy files the test writes), printing each step's loss as a hex float
// so the test can compare them bitwise, and the mean step time for the overhead figure.
#include <vkspmd/vkspmd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
  if (argc != 5) {
    std::fprintf(stderr, "usage: %s tokens.npy targets.npy steps fsdp|plain\n", argv[0]);
    return 2;
  }
  try {
    vkspmd::manual_seed(7);
    vkspmd::nn::TransformerLM model(
        {.vocab = 32, .d_model = 16, .heads = 2, .layers = 1, .max_seq = 8});
    if (std::string(argv[4]) == "fsdp") {
      vkspmd::nn::fsdp_v2(model, vkspmd::nn::strategy_mesh("fsdp", {2}));
    }
    vkspmd::optim::AdamW optimizer(model.parameters(), 1e-2);
    vkspmd::mark_step();
    const vkspmd::Tensor tokens = vkspmd::from_npy(argv[1]);
    const vkspmd::Tensor targets = vkspmd::from_npy(argv[2]);
    const int steps = std::atoi(argv[3]);
    auto start = std::chrono::steady_clock::now();
    for (int step = 0; step < steps; ++step) {
      if (step == 1) start = std::chrono::steady_clock::now();  // Step 0 compiles.
      vkspmd::Tensor inputs = model.shard_input(tokens);
      vkspmd::Tensor labels = model.shard_input(targets);
      vkspmd::Tensor loss = model.loss(inputs, labels);
      optimizer.step(vkspmd::grad(loss, model.parameters()));
      vkspmd::mark_step();
      std::printf("loss %a\n", loss.item());
    }
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("step_us %.1f\n", 1e6 * seconds / (steps - 1));
    return 0;
  } catch (const vkspmd::Error& error) {
    std::fprintf(stderr, "train_reference: %s\n", error.what());
    return 1;
  }
}
