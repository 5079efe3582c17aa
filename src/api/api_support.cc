// Boundary helpers of the public API.
#include "src/api/api_support.h"

#include <cstring>
#include <map>
#include <mutex>

#include "absl/strings/str_cat.h"
#include "src/lazy/context.h"
#include "src/lazy/engine.h"
#include "src/lazy/value_transfer.h"

namespace vkspmd::lazy {

void ThrowStatus(const absl::Status& status) {
  throw Error(static_cast<ErrorCode>(status.code()), std::string(status.message()));
}

NodePtr NodeOf(const Tensor& tensor, const char* op) {
  if (!tensor.defined()) {
    throw Error(ErrorCode::kInvalidArgument, absl::StrCat(op, ": the tensor is undefined"));
  }
  return tensor.state()->node;
}

Tensor Wrap(absl::StatusOr<NodePtr> node) {
  return Tensor(Context::Get().NewTensor(Unwrap(std::move(node))));
}

DType FromIrType(ir::DType type) {
  switch (type) {
    case ir::DType::kF32:
      return DType::kFloat32;
    case ir::DType::kS32:
      return DType::kInt32;
    case ir::DType::kU32:
      return DType::kUInt32;
    case ir::DType::kPred:
      return DType::kBool;
    case ir::DType::kF16:
      return DType::kFloat16;
    case ir::DType::kBF16:
      return DType::kBFloat16;
    default:
      break;
  }
  throw Error(ErrorCode::kUnimplemented,
              absl::StrCat(
                  "element type ", std::string(ir::DTypeName(type)),
                  " has no public name (float32, float16, bfloat16, int32, uint32 and bool have)"));
}

NodePtr ScalarFor(Scalar value, ir::DType tensor_type) {
  ir::DType type = tensor_type;
  if (value.is_floating() && !ir::IsFloat(type)) type = ir::DType::kF32;
  if (type == ir::DType::kPred && !value.is_bool()) type = ir::DType::kS32;
  return MakeHostLeaf([&] {
    ir::Literal literal(ir::Shape::Scalar(type));
    if (ir::IsFloat(type)) {
      literal.SetFromDouble(0, value.value());
    } else {
      literal.SetFromInt64(0, static_cast<int64_t>(value.value()));
    }
    return literal;
  }());
}

int64_t NormalizeDim(int64_t dim, int64_t rank, const char* op) {
  const int64_t normalized = dim < 0 ? dim + rank : dim;
  if (normalized < 0 || normalized >= rank) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat(op, ": dim ", dim, " is out of range for a tensor of rank ", rank));
  }
  return normalized;
}

spmd::Mesh ToSpmdMesh(const Mesh& mesh) {
  return Unwrap(spmd::Mesh::Create(mesh.shape(), mesh.device_ids(), mesh.axis_names()));
}

spmd::PartitionSpec ToSpmdSpec(const PartitionSpec& spec) {
  std::vector<std::vector<spmd::AxisRef>> dims;
  for (const SpecEntry& entry : spec) {
    std::vector<spmd::AxisRef> axes;
    for (const AxisName& axis : entry.axes()) {
      if (const int64_t* index = std::get_if<int64_t>(&axis.value())) {
        axes.emplace_back(*index);
      } else {
        axes.emplace_back(std::get<std::string>(axis.value()));
      }
    }
    dims.push_back(std::move(axes));
  }
  return spmd::PartitionSpec(std::move(dims));
}

PlacementPtr PlacementOf(const Mesh& mesh) {
  // A program has a few meshes and marks many tensors every step: the placement is found by the
  // mesh's value, and made once per mesh (one object, so SamePlacement compares pointers).
  static std::mutex mutex;
  static auto* placements = new std::vector<std::pair<Mesh, PlacementPtr>>();
  auto find = [&]() -> PlacementPtr {
    for (const auto& [known, placement] : *placements) {
      if (known == mesh) return placement;
    }
    return nullptr;
  };
  {
    std::lock_guard<std::mutex> lock(mutex);
    if (PlacementPtr placement = find()) return placement;
  }
  PlacementPtr placement = Unwrap(PlacementForMesh(ToSpmdMesh(mesh)));
  std::lock_guard<std::mutex> lock(mutex);
  if (PlacementPtr known = find()) return known;
  placements->emplace_back(mesh, placement);
  return placement;
}

ir::Literal ReadValue(const Tensor& tensor, const std::source_location& where) {
  NodePtr node = NodeOf(tensor, "reading a value");
  if (node->host_value.has_value()) return *node->host_value;
  if (!node->is_leaf()) {
    ThrowIfError(Context::Get().Sync({tensor.state()}, SyncCause::kValueRead, where));
    node = tensor.state()->node;
  }
  std::shared_ptr<DeviceValue> value = node->device_value;
  return Unwrap(Engine::Get().Read(value));
}

HostTensor ToHostTensor(const ir::Literal& literal) {
  HostTensor host;
  host.shape = literal.shape().dimensions();
  host.dtype = FromIrType(literal.dtype());
  host.bytes.resize(literal.bytes().size());
  if (!host.bytes.empty())
    std::memcpy(host.bytes.data(), literal.bytes().data(), host.bytes.size());
  return host;
}

ir::Literal FromHostTensor(const HostTensor& value) {
  ir::Literal literal(ir::Shape(ToIrType(value.dtype), value.shape));
  if (literal.bytes().size() != value.bytes.size()) {
    throw Error(ErrorCode::kInvalidArgument,
                absl::StrCat("host data of ", value.bytes.size(), " bytes for shape ",
                             literal.shape().ToString(), ", which needs ", literal.bytes().size()));
  }
  if (!value.bytes.empty()) {
    std::memcpy(literal.bytes().data(), value.bytes.data(), value.bytes.size());
  }
  return literal;
}

}  // namespace vkspmd::lazy
