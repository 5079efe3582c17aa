// The worker thread and its queue.
#include "src/lazy/engine.h"

#include <stdlib.h>  // on_exit

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>

#include "src/base/status_macros.h"
#include "src/debug/trace_writer.h"
#include "src/exec/sharded_gather.h"
#include "src/lazy/device_value.h"
#include "src/lazy/distributed.h"
#include "src/lazy/value_transfer.h"

namespace vkspmd::lazy {

Engine& Engine::Get() {
  // Never destroyed: tensors held in static storage may still release device values at exit.
  static Engine* engine = new Engine();
  return *engine;
}

Engine::Engine() {
  // VKSPMD_TRACE traces from the first use of the runtime.
  debug::StartTraceFromEnvironment();
  // Set before any work is queued; the pool calls it on the worker when it closes its devices.
  pool_.SetBeforeClose([this] { runner_.Clear(); });
}

Engine::~Engine() { Shutdown(); }

void Engine::Post(std::function<void()> work) {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    queue_.push_back(std::move(work));
    if (!worker_.joinable()) worker_ = std::thread([this] { Loop(); });
  }
  changed_.notify_all();
}

// Why the devices open before Launch and Place return. The exit guard (AtExit) is registered by
// the worker after work that opened devices, and protects only because it is newer than the
// exit handlers (C++ static destructors) of the driver and the validation layer that opening
// them loaded. While the worker opens the devices, nothing protects it: a caller that returns
// from main meanwhile runs exit with the worker inside vkCreateInstance or vkCreateDevice,
// destroying the loader's, the layer's and this library's statics under it (segfaults and
// "double free or corruption" in lazy_exit_while_running, which leaves main right after
// mark_step). That never happened while mark_sharding uploaded through Call; since Place queues
// the upload, the first mark_sharding returned before the devices were open. So opening runs
// here, waited for, and the guard is in place (Call's GuardExit) before the caller can exit; then
// Place and Launch queue without waiting, as before, for as long as the devices stay open.
void Engine::OpenDevicesBeforeQueuing(const Placement& placement) {
  const int64_t open = pool_.open_count();
  int64_t needed = *std::max_element(placement.devices.begin(), placement.devices.end()) + 1;
  int64_t wanted = DevicePool::WantedDevices();
  if (const DistributedState* job = Distributed()) needed = wanted = job->local_devices;
  // DevicePool::DevicesFor's conditions, read from here. Growing to a larger mesh also needs no
  // live buffers, which only the worker knows for sure (it drops the shared scalars first): try
  // once per larger mesh, and again whenever no buffer lives.
  const bool grows =
      open < wanted && (opened_for_wanted_.load() != wanted || DeviceValue::LiveBufferCount() == 0);
  if (open > 0 && open >= needed && !grows) return;
  // An error (no such device) is not reported here: the queued work meets it again and reports it
  // as it always did.
  (void)Call([&](DevicePool& pool) { return pool.DevicesFor(placement).status(); });
  opened_for_wanted_ = wanted;
}

void Engine::Shutdown() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    if (!worker_.joinable()) return;  // Never started, or already shut down.
  }
  (void)Call([this](DevicePool& pool) {
    DeviceValue::ReleaseAll(absl::FailedPreconditionError(
        "the runtime was shut down (vkspmd::shutdown or exit): this tensor's device value was "
        "freed"));
    runner_.Clear();
    pool.Close();
    return absl::OkStatus();
  });
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stopping_ = true;
  }
  changed_.notify_all();
  worker_.join();
  std::lock_guard<std::mutex> lock(mutex_);
  worker_ = std::thread();
  stopping_ = false;
}

void Engine::Loop() {
  debug::NameHostThread("lazy engine (compiles and launches)");
  while (true) {
    std::function<void()> work;
    {
      std::unique_lock<std::mutex> lock(mutex_);
      busy_ = false;
      changed_.notify_all();
      changed_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      work = std::move(queue_.front());
      queue_.pop_front();
      busy_ = true;
    }
    work();
  }
}

void Engine::Launch(GraphTask task) {
  std::vector<std::unique_ptr<ir::Module>> retired;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    retired.swap(retired_modules_);
  }
  retired.clear();  // Here, on the tracing thread, while the devices run the queued graphs.
  OpenDevicesBeforeQueuing(*task.placement);
  // A new lowering is compiled here, waited for, for the same reason the devices open before
  // queuing: compiling loads code (lavapipe's LLVM registers exit handlers as it first meets
  // them) whose exit handlers would be newer than the exit guard, so a caller leaving main while
  // the worker compiles would run them first and destroy LLVM's statics under the compiling
  // thread (1 in 5 to 20 runs of lazy_exit_while_running crashed so). Call registers the guard
  // again after compiling. A repeated step's graph has no new lowering and is not waited for.
  if (task.module != nullptr) {
    task.compile_status = Call([&](DevicePool& pool) { return runner_.Prepare(task, pool); });
  }
  auto shared = std::make_shared<GraphTask>(std::move(task));
  Post([this, shared] {
    runner_.Run(*shared, pool_);
    GuardExit();
    // A module the graph cache already had is not needed; freeing its thousands of instructions
    // here would delay the next graph by milliseconds.
    if (shared->module != nullptr) {
      std::lock_guard<std::mutex> lock(mutex_);
      retired_modules_.push_back(std::move(shared->module));
    }
  });
}

void Engine::GuardExit() {
  if (pool_.generation() == guarded_generation_ && runner_.cached() == guarded_graphs_) return;
  guarded_generation_ = pool_.generation();
  guarded_graphs_ = runner_.cached();
  if (pool_.generation() == 0) return;  // No device opened yet: nothing loaded to protect.
  on_exit(&Engine::AtExit, this);
}

void Engine::AtExit(int status, void* engine) {
  static std::atomic<bool> ran{false};
  if (ran.exchange(true)) return;  // The latest registration did the work.
  Engine& self = *static_cast<Engine*>(engine);
  const bool idle = self.WaitIdleFor(std::chrono::minutes(1));
  // With the worker idle, its pool is not in use.
  if (!idle || self.pool_.WorkMayStillRun()) {
    std::fflush(nullptr);
    std::_Exit(status);
  }
  self.Shutdown();
}

absl::Status Engine::Call(const std::function<absl::Status(DevicePool&)>& work) {
  std::mutex done_mutex;
  std::condition_variable done_changed;
  bool done = false;
  absl::Status status;
  Post([&] {
    status = work(pool_);
    GuardExit();
    std::lock_guard<std::mutex> lock(done_mutex);
    done = true;
    done_changed.notify_all();
  });
  std::unique_lock<std::mutex> lock(done_mutex);
  done_changed.wait(lock, [&] { return done; });
  return status;
}

void Engine::Place(std::shared_ptr<const ir::Literal> host, std::shared_ptr<DeviceValue> source,
                   std::shared_ptr<DeviceValue> value) {
  OpenDevicesBeforeQueuing(*value->placement());
  Post([this, host = std::move(host), source = std::move(source), value = std::move(value)] {
    absl::Status status = [&]() -> absl::Status {
      ir::Literal downloaded;
      if (host == nullptr) {
        VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* buffer, source->WaitBuffer());
        VKSPMD_ASSIGN_OR_RETURN(downloaded, DownloadValue(*buffer));
      }
      VKSPMD_ASSIGN_OR_RETURN(spmd::AxisSharding sharding, value->WaitSharding());
      VKSPMD_ASSIGN_OR_RETURN(
          std::unique_ptr<exec::ShardedBuffer> buffer,
          UploadValue(host != nullptr ? *host : downloaded, *value->placement(), sharding, pool_));
      value->SetBuffer(std::move(buffer));
      return absl::OkStatus();
    }();
    if (!status.ok()) value->SetError(status);
    GuardExit();
  });
}

absl::StatusOr<ir::Literal> Engine::Read(const std::shared_ptr<DeviceValue>& value) {
  VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* buffer, value->WaitBuffer());
  // In a job of several processes, a value this process's shards do not cover whole is gathered
  // through the collectives, which run on the worker in queue order (the same on every process).
  bool mapped = !buffer->donated() && exec::CoveredByAddressable(*buffer);
  for (size_t d = 0; mapped && d < buffer->shard_count(); ++d) {
    mapped = !buffer->addressable(d) || buffer->shard(d).mapped() != nullptr;
  }
  // The run that wrote the value has finished (its fence waited) before the buffer was set, and
  // the memory is host-coherent: a plain copy sees the result.
  if (mapped) return DownloadValue(*buffer);
  ir::Literal literal;
  VKSPMD_RETURN_IF_ERROR(Call([&](DevicePool&) -> absl::Status {
    VKSPMD_ASSIGN_OR_RETURN(const exec::ShardedBuffer* queued, value->WaitBuffer());
    VKSPMD_ASSIGN_OR_RETURN(literal, DownloadValue(*queued));
    return absl::OkStatus();
  }));
  return literal;
}

void Engine::WaitIdle() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return queue_.empty() && !busy_; });
}

bool Engine::WaitIdleFor(std::chrono::milliseconds timeout) {
  std::unique_lock<std::mutex> lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return queue_.empty() && !busy_; });
}

int64_t Engine::CloseDevices() {
  int64_t messages = 0;
  (void)Call([&](DevicePool& pool) {
    runner_.Clear();
    pool.Close();
    messages = pool.ValidationMessageCount();
    return absl::OkStatus();
  });
  return messages;
}

}  // namespace vkspmd::lazy
