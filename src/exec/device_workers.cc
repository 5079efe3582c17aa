// The worker loop: wait for the next job generation, run this worker's part, report.
#include "src/exec/device_workers.h"

#include "absl/strings/str_cat.h"
#include "src/debug/trace_writer.h"

namespace vkspmd::exec {

DeviceWorkers::DeviceWorkers(size_t count) {
  for (size_t worker = 0; worker < count; ++worker) {
    threads_.emplace_back([this, worker] { Loop(worker); });
  }
}

DeviceWorkers::~DeviceWorkers() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  start_.notify_all();
  for (std::thread& thread : threads_) thread.join();
}

void DeviceWorkers::RunOnEach(const std::function<void(size_t)>& job) {
  std::unique_lock<std::mutex> lock(mutex_);
  job_ = &job;
  running_ = threads_.size();
  ++generation_;
  start_.notify_all();
  done_.wait(lock, [&] { return running_ == 0; });
  job_ = nullptr;
}

void DeviceWorkers::Loop(size_t worker) {
  debug::NameHostThread(absl::StrCat("device worker ", worker));
  uint64_t seen = 0;
  while (true) {
    const std::function<void(size_t)>* job;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      start_.wait(lock, [&] { return stopping_ || generation_ != seen; });
      if (stopping_) return;
      seen = generation_;
      job = job_;
    }
    (*job)(worker);
    std::lock_guard<std::mutex> lock(mutex_);
    if (--running_ == 0) done_.notify_one();
  }
}

}  // namespace vkspmd::exec
