// One long-lived host thread per mesh device. A mesh program runs every device's part at once;
// starting threads on every run would put thread creation on every training step.
#pragma once

#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <thread>
#include <vector>

namespace vkspmd::exec {

class DeviceWorkers {
 public:
  explicit DeviceWorkers(size_t count);
  ~DeviceWorkers();
  DeviceWorkers(const DeviceWorkers&) = delete;
  DeviceWorkers& operator=(const DeviceWorkers&) = delete;

  // Runs job(d) on worker d for every d, and returns when all have finished. One call at a time.
  void RunOnEach(const std::function<void(size_t)>& job);

  size_t size() const { return threads_.size(); }

 private:
  void Loop(size_t worker);

  std::mutex mutex_;
  std::condition_variable start_;
  std::condition_variable done_;
  const std::function<void(size_t)>* job_ = nullptr;
  uint64_t generation_ = 0;  // Counts jobs, so a worker runs each exactly once.
  size_t running_ = 0;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace vkspmd::exec
