// Partition specs and the sharding kinds of a tensor (the PyTorch/XLA mark_sharding model):
// per tensor dim a mesh axis by index or name, a tuple of axes, or None.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <variant>
#include <vector>

namespace vkspmd {

// A mesh axis by index (0) or by name ("dp").
class AxisName {
 public:
  AxisName(int value) : axis_(static_cast<int64_t>(value)) {}  // NOLINT: {0, 1} reads as axes.
  AxisName(int64_t value) : axis_(value) {}                    // NOLINT
  AxisName(const char* name) : axis_(std::string(name)) {}     // NOLINT
  AxisName(std::string name) : axis_(std::move(name)) {}       // NOLINT
  const std::variant<int64_t, std::string>& value() const { return axis_; }

 private:
  std::variant<int64_t, std::string> axis_;
};

// A tuple of mesh axes splitting one dim over their product (major first): Axes{"dp", "tp"}.
struct Axes {
  Axes(std::initializer_list<AxisName> list) : axes(list) {}
  std::vector<AxisName> axes;
};

// The entry of an unsplit dim.
struct NoneType {};
inline constexpr NoneType None{};

// One partition-spec entry: an axis, a tuple of axes, or None.
class SpecEntry {
 public:
  SpecEntry(NoneType) {}                                             // NOLINT: {0, None}.
  SpecEntry(AxisName axis) : axes_{std::move(axis)} {}               // NOLINT
  SpecEntry(int axis) : axes_{AxisName(axis)} {}                     // NOLINT
  SpecEntry(int64_t axis) : axes_{AxisName(axis)} {}                 // NOLINT
  SpecEntry(const char* axis) : axes_{AxisName(axis)} {}             // NOLINT
  SpecEntry(std::string axis) : axes_{AxisName(std::move(axis))} {}  // NOLINT
  SpecEntry(Axes axes) : axes_(std::move(axes.axes)) {}              // NOLINT
  // Empty for None.
  const std::vector<AxisName>& axes() const { return axes_; }

 private:
  std::vector<AxisName> axes_;
};

// One entry per tensor dim: mark_sharding(t, mesh, {0, None}), {"dp", None}, {Axes{0, 1}, None}.
using PartitionSpec = std::vector<SpecEntry>;

// The kinds of HLO sharding, as PyTorch/XLA's ShardingType.
enum class ShardingType { kReplicated, kMaximal, kTiled, kPartial, kManual };

// "REPLICATED", "MAXIMAL", "TILED", "PARTIAL", "MANUAL".
std::string sharding_type_name(ShardingType type);

}  // namespace vkspmd
