// Waiting for values the worker thread produces.
#include "src/lazy/device_value.h"

#include <atomic>
#include <set>

#include "absl/container/flat_hash_map.h"
#include "src/debug/trace_writer.h"

namespace vkspmd::lazy {
namespace {

std::atomic<int64_t> live_buffers{0};

// Every DeviceValue alive, so shutdown can free their buffers before the devices close. Never
// destroyed: tensors in static storage unregister during exit, after any destructor order.
std::mutex& RegistryMutex() {
  static auto* mutex = new std::mutex();
  return *mutex;
}
std::set<DeviceValue*>& Registry() {
  static auto* values = new std::set<DeviceValue*>();
  return *values;
}

}  // namespace

DeviceValue::DeviceValue(PlacementPtr placement, ir::Shape shape,
                         std::optional<spmd::AxisSharding> sharding)
    : placement_(std::move(placement)), shape_(std::move(shape)), sharding_(std::move(sharding)) {
  std::lock_guard<std::mutex> lock(RegistryMutex());
  Registry().insert(this);
}

DeviceValue::~DeviceValue() {
  {
    std::lock_guard<std::mutex> lock(RegistryMutex());
    Registry().erase(this);
  }
  if (buffer_ != nullptr) --live_buffers;
}

void DeviceValue::ReleaseAll(const absl::Status& why) {
  std::lock_guard<std::mutex> registry_lock(RegistryMutex());
  for (DeviceValue* value : Registry()) {
    std::lock_guard<std::mutex> lock(value->mutex_);
    if (value->buffer_ != nullptr) {
      value->buffer_.reset();
      --live_buffers;
    }
    if (value->error_.ok()) value->error_ = why;
    value->changed_.notify_all();
  }
}

void DeviceValue::SetSharding(const spmd::AxisSharding& sharding) {
  std::lock_guard<std::mutex> lock(mutex_);
  sharding_ = sharding;
  changed_.notify_all();
}

void DeviceValue::SetBuffer(std::unique_ptr<exec::ShardedBuffer> buffer) {
  std::lock_guard<std::mutex> lock(mutex_);
  if (buffer_ == nullptr) ++live_buffers;
  sharding_ = buffer->sharding();
  buffer_ = std::move(buffer);
  changed_.notify_all();
}

void DeviceValue::SetError(const absl::Status& error) {
  std::lock_guard<std::mutex> lock(mutex_);
  error_ = error;
  changed_.notify_all();
}

std::optional<spmd::AxisSharding> DeviceValue::KnownSharding() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return sharding_;
}

absl::StatusOr<spmd::AxisSharding> DeviceValue::WaitSharding() const {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return sharding_.has_value() || !error_.ok(); });
  if (!error_.ok()) return error_;
  return *sharding_;
}

absl::StatusOr<const exec::ShardedBuffer*> DeviceValue::WaitBuffer() const {
  debug::ScopedTraceSpan span("wait for value");
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return buffer_ != nullptr || !error_.ok(); });
  if (!error_.ok()) return error_;
  return buffer_.get();
}

absl::StatusOr<exec::ShardedBuffer*> DeviceValue::WaitBufferToDonate() {
  std::unique_lock<std::mutex> lock(mutex_);
  changed_.wait(lock, [&] { return buffer_ != nullptr || !error_.ok(); });
  if (!error_.ok()) return error_;
  return buffer_.get();
}

bool DeviceValue::Failed() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return !error_.ok();
}

int64_t DeviceValue::LiveBufferCount() { return live_buffers.load(); }

namespace {

// Enough for every distinct constant of a training step; a scalar that changes every step (a
// learning rate schedule) adds one a step, so the map is emptied now and then.
constexpr size_t kMaxSharedScalars = 4096;

struct SharedScalarMap {
  std::mutex mutex;
  absl::flat_hash_map<std::string, std::shared_ptr<DeviceValue>> values;
};

SharedScalarMap& Scalars() {
  static auto* scalars = new SharedScalarMap();
  return *scalars;
}

}  // namespace

std::shared_ptr<DeviceValue> SharedScalars::Find(const std::string& key) {
  SharedScalarMap& scalars = Scalars();
  std::lock_guard<std::mutex> lock(scalars.mutex);
  auto found = scalars.values.find(key);
  if (found == scalars.values.end() || found->second->Failed()) return nullptr;
  return found->second;
}

void SharedScalars::Insert(const std::string& key, std::shared_ptr<DeviceValue> value) {
  SharedScalarMap& scalars = Scalars();
  std::lock_guard<std::mutex> lock(scalars.mutex);
  if (scalars.values.size() >= kMaxSharedScalars) scalars.values.clear();
  scalars.values[key] = std::move(value);
}

void SharedScalars::Clear() {
  SharedScalarMap& scalars = Scalars();
  std::lock_guard<std::mutex> lock(scalars.mutex);
  scalars.values.clear();
}

}  // namespace vkspmd::lazy
