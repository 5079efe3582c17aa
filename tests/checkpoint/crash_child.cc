// The process the crash test kills: saves step STEP of a 2x2-sharded state into DIR through a
// CheckpointManager keeping 2 steps (so a save also deletes a step), with whatever
// VKSPMD_CHECKPOINT_FAULT the test set. Usage: checkpoint_crash_child DIR STEP.
#include <cstdio>
#include <cstdlib>
#include <string>

#include "tests/checkpoint/crash_state.h"
#include "vkspmd/vkspmd.h"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s DIR STEP\n", argv[0]);
    return 2;
  }
  try {
    const int64_t step = std::stoll(argv[2]);
    const vkspmd::Mesh mesh({2, 2}, {}, {"dp", "tp"});
    std::vector<vkspmd::Tensor> tensors = vkspmd::testing::CrashStateTensors(step, &mesh);
    vkspmd::CheckpointManager manager(argv[1], {.max_to_keep = 2});
    manager.save(step, vkspmd::testing::CrashState(tensors));
    vkspmd::shutdown();
  } catch (const vkspmd::Error& error) {
    std::fprintf(stderr, "checkpoint_crash_child: %s\n", error.what());
    return 1;
  }
  return 0;
}
