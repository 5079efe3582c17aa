// The public multi-process API (include/vkspmd/distributed.h) over lazy::InitializeDistributed.
#include <atomic>

#include "src/api/api_support.h"
#include "src/lazy/device_pool.h"
#include "src/lazy/distributed.h"
#include "vkspmd/distributed.h"

namespace vkspmd::distributed {
namespace {

std::atomic<bool> initialized{false};

// One process's own devices, for the queries before (or without) initialize().
int LocalDeviceCount() {
  return static_cast<int>(lazy::Unwrap(lazy::DevicePool::AvailableDeviceCount()));
}

}  // namespace

void initialize() {
  lazy::ThrowIfError(lazy::InitializeDistributed().status());
  initialized = true;
}

bool is_initialized() { return initialized.load(); }

int process_index() {
  const lazy::DistributedState* job = lazy::Distributed();
  return job == nullptr ? 0 : job->process_index;
}

int process_count() {
  const lazy::DistributedState* job = lazy::Distributed();
  return job == nullptr ? 1 : job->process_count;
}

int device_count() {
  const lazy::DistributedState* job = lazy::Distributed();
  return job == nullptr ? LocalDeviceCount() : static_cast<int>(job->global_devices);
}

std::vector<int> addressable_devices() {
  const lazy::DistributedState* job = lazy::Distributed();
  const int first = job == nullptr ? 0 : static_cast<int>(job->first_device);
  const int count = job == nullptr ? LocalDeviceCount() : static_cast<int>(job->local_devices);
  std::vector<int> devices;
  for (int d = 0; d < count; ++d) devices.push_back(first + d);
  return devices;
}

}  // namespace vkspmd::distributed
