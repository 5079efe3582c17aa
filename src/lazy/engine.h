// Engine: the lazy runtime's worker thread. Everything that touches the devices runs on it, in
// the order it was queued: compiling and running graphs (so sync returns while the devices
// work), uploads, and the gathers that reading a value needs. Owns the devices and the graph
// cache.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
  // Queues moving `host` (host data) or else `source` (a device value anywhere) into `value`, on
  // value's placement with its sharding (known now), and returns at once. A graph launched later
  // reads `value` in queue order; an error becomes value's error. So placing a step's batch on a
  // mesh does not wait for the graphs queued before it.
  void Place(std::shared_ptr<const ir::Literal> host, std::shared_ptr<DeviceValue> source,
             std::shared_ptr<DeviceValue> value);
  // Waits for `value` and reads it to the host. Where its shards are mapped host memory
  // (lavapipe, resizable-BAR GPUs) the copy runs on the calling thread, so reading step k's loss
  // does not queue behind step k+1's graph and the caller can trace step k+2 while the devices
  // run k+1; otherwise the download runs on the worker after everything queued.
  absl::StatusOr<ir::Literal> Read(const std::shared_ptr<DeviceValue>& value);
  void WaitIdle();
  // WaitIdle for at most `timeout`; whether the queue ran empty.
  bool WaitIdleFor(std::chrono::milliseconds timeout);
  // Waits, then closes the devices and empties the graph cache (tests check validation
  // messages of the teardown this way). Returns the validation message count.
  int64_t CloseDevices();
  // vkspmd::shutdown(): waits for launched graphs, frees every tensor's device value (their
  // readers get a FAILED_PRECONDITION saying so), empties the graph cache, closes the devices and
  // stops the worker thread. The next use starts the worker and opens devices again.
  void Shutdown();

 private:
  Engine();
  void Post(std::function<void()> work);
  // On the calling thread, before queuing work on `placement` that it does not wait for (Launch,
  // Place): when that work would open (or reopen, to grow) the devices, opens them now on the
  // worker and waits, so the exit guard is registered before the caller goes on. See the .cc.
  void OpenDevicesBeforeQueuing(const Placement& placement);
  void Loop();
  // On the worker, after work that may have loaded driver or validation-layer code: registers
  // the exit guard again when devices opened or a graph compiled since the last registration.
  void GuardExit();
  // The exit guard (glibc's on_exit, which passes the exit status). Exit handlers run in the
  // reverse order of registration, so the latest registration runs before the static
  // destructors of everything the devices loaded so far. It lets launched graphs finish (at most
  // a minute) and shuts the runtime down, so the devices close before the driver's and the
  // validation layer's statics go: teardown in a defined order. If a device failed while its
  // work may still run (lavapipe's threads keep compiling and running a lost device's commands),
  // it leaves at once with the exit status and flushed stdio instead of destroying statics those
  // threads use.
  static void AtExit(int status, void* engine);

  std::mutex mutex_;
  std::condition_variable changed_;
  std::deque<std::function<void()>> queue_;
  // Modules of launched graphs found in the graph cache, freed by the next Launch.
  std::vector<std::unique_ptr<ir::Module>> retired_modules_;
  bool busy_ = false;
  bool stopping_ = false;
  DevicePool pool_;
  GraphRunner runner_;
  std::thread worker_;  // Started by the first Post after construction or Shutdown.
  // What the exit guard was last registered after (worker only).
  int64_t guarded_generation_ = -1;
  size_t guarded_graphs_ = 0;
  // DevicePool::WantedDevices() when OpenDevicesBeforeQueuing last opened devices and waited.
  std::atomic<int64_t> opened_for_wanted_{0};
};

}  // namespace vkspmd::lazy
