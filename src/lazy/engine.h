// Engine: the lazy runtime's worker thread. Everything that touches the devices runs on it, in
// the order it was queued: compiling and running graphs (so sync returns while the devices
// work), uploads, and the gathers that reading a value needs. Owns the devices and the graph
// cache.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>

#include "absl/status/statusor.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/graph_runner.h"

namespace vkspmd::lazy {

class Engine {
 public:
  static Engine& Get();
  ~Engine();

  // Queues `task` and returns at once.
  void Launch(GraphTask task);
  // Runs `work` on the worker after everything queued so far, and waits for its result.
  absl::Status Call(const std::function<absl::Status(DevicePool&)>& work);
  void WaitIdle();
  // Waits, then closes the devices and empties the graph cache (tests check validation
  // messages of the teardown this way). Returns the validation message count.
  int64_t CloseDevices();

 private:
  Engine();
  void Post(std::function<void()> work);
  void Loop();

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  bool busy_ = false;
  bool stopping_ = false;
  DevicePool pool_;
  GraphRunner runner_;
  std::thread worker_;
};

}  // namespace vkspmd::lazy
