// The α/β collective times, kernel times and resharding times auto-sharding's ILP is built from,
// and the line fit that turns measured timings into α and β.
#include "src/spmd/auto_sharding_cost.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/numbers.h"
#include "absl/strings/str_split.h"
#include "fmt/format.h"

namespace vkspmd::spmd {

absl::string_view CollectiveKindName(CollectiveKind kind) {
  switch (kind) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kAllGather:
      return "all-gather";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllToAll:
      return "all-to-all";
    case CollectiveKind::kCollectivePermute:
      return "collective-permute";
  }
  return "?";
}

AlphaBeta FitAlphaBeta(const std::vector<std::pair<double, double>>& samples) {
  if (samples.empty()) return {};
  const double n = static_cast<double>(samples.size());
  double mean_x = 0, mean_y = 0;
  for (const auto& [x, y] : samples) {
    mean_x += x / n;
    mean_y += y / n;
  }
  double sxx = 0, sxy = 0;
  for (const auto& [x, y] : samples) {
    sxx += (x - mean_x) * (x - mean_x);
    sxy += (x - mean_x) * (y - mean_y);
  }
  AlphaBeta fit{mean_y, 0};
  if (sxx > 0) fit = {mean_y - sxy / sxx * mean_x, sxy / sxx};
  // Timing noise can tilt a flat line below zero; a cost is never negative.
  if (fit.beta < 0) fit = {mean_y, 0};
  if (fit.alpha < 0) {
    // Through the origin: beta = Σxy / Σxx.
    double xx = 0, xy = 0;
    for (const auto& [x, y] : samples) {
      xx += x * x;
      xy += x * y;
    }
    fit = {0, xx > 0 ? std::max(0.0, xy / xx) : 0};
  }
  return fit;
}

CostModel CostModel::Default(const Mesh& mesh) {
  CostModel model;
  std::array<AlphaBeta, kCollectiveKinds> defaults;
  defaults.fill(AlphaBeta{20e-6, 1.0 / 2e9});
  model.axes.assign(mesh.axis_count(), defaults);
  model.flops_per_second = 2e10;
  model.element_ops_per_second = 2e10;
  return model;
}

double CostModel::Kernel(double flops, double bytes, double kernels, double element_ops) const {
  double seconds = kernels * kernel_seconds + flops / flops_per_second;
  if (element_ops > 0) seconds += element_ops / element_ops_per_second;
  if (bytes_per_second > 0) seconds += bytes / bytes_per_second;
  return seconds;
}

double CostModel::Collective(CollectiveKind kind, int64_t axis, int64_t bytes, const Mesh& mesh,
                             bool bucketed) const {
  const double n = static_cast<double>(mesh.axis_size(axis));
  if (n <= 1) return 0;
  double volume = static_cast<double>(bytes);
  if (kind == CollectiveKind::kAllReduce) volume *= 2.0 * (n - 1) / n;
  if (kind != CollectiveKind::kAllReduce && kind != CollectiveKind::kCollectivePermute) {
    volume *= (n - 1) / n;
  }
  const AlphaBeta& cost = axes[axis][static_cast<int>(kind)];
  return (bucketed ? 0.0 : cost.alpha) + cost.beta * volume;
}

double CostModel::Reshard(const ir::Shape& shape, const AxisSharding& from, const AxisSharding& to,
                          const Mesh& mesh) const {
  if (from == to) return 0;
  double seconds = 0;
  if (from.IsSpecial() || to.IsSpecial() || from.device_order != to.device_order) {
    // No axis correspondence: gather the whole value first.
    for (int64_t axis : from.UsedAxes()) {
      seconds += Collective(CollectiveKind::kAllGather, axis, ByteSize(shape), mesh);
    }
    return seconds;
  }
  int64_t local = ByteSize(shape) / std::max<int64_t>(1, from.NumTiles(mesh));
  bool slices = false;  // some axis of `to` is new on its dim: a kernel cuts the shard out
  for (size_t d = 0; d < to.dims.size(); ++d) {
    for (size_t k = 0; k < to.dims[d].size(); ++k) {
      if (k >= from.dims[d].size() || from.dims[d][k] != to.dims[d][k]) slices = true;
    }
  }
  if (slices) {
    // Reads the shard it cuts from (at most what it has once gathered) and writes the new one.
    const double written =
        static_cast<double>(ByteSize(shape)) / std::max<int64_t>(1, to.NumTiles(mesh));
    seconds += Kernel(0, static_cast<double>(local) + written);
  }
  for (size_t d = 0; d < from.dims.size(); ++d) {
    const std::vector<int64_t>& dim_axes = from.dims[d];
    // The axes of dim d that `to` keeps as the same prefix of the dim stay where they are.
    size_t kept = 0;
    while (kept < dim_axes.size() && kept < to.dims[d].size() &&
           dim_axes[kept] == to.dims[d][kept]) {
      ++kept;
    }
    // The rest go minor first: an axis `to` uses on another dim moves by an all-to-all, one it
    // does not use is gathered.
    for (size_t k = dim_axes.size(); k > kept; --k) {
      const int64_t axis = dim_axes[k - 1];
      bool used_elsewhere = false;
      for (size_t e = 0; e < to.dims.size(); ++e) {
        if (e != d && std::find(to.dims[e].begin(), to.dims[e].end(), axis) != to.dims[e].end()) {
          used_elsewhere = true;
        }
      }
      if (used_elsewhere) {
        seconds += Collective(CollectiveKind::kAllToAll, axis, local, mesh);
      } else {
        local *= mesh.axis_size(axis);
        seconds += Collective(CollectiveKind::kAllGather, axis, local, mesh);
      }
    }
  }
  return seconds;
}

std::string CostModel::Serialize(const Mesh& mesh) const {
  std::string text;
  for (int64_t axis = 0; axis < mesh.axis_count(); ++axis) {
    for (int kind = 0; kind < kCollectiveKinds; ++kind) {
      const AlphaBeta& cost = this->axes[axis][kind];
      text += fmt::format("axis {} {} alpha_s={:.6g} beta_s_per_byte={:.6g}\n", axis,
                          std::string(CollectiveKindName(static_cast<CollectiveKind>(kind))),
                          cost.alpha, cost.beta);
    }
  }
  text += fmt::format(
      "flops_per_second={:.6g}\nelement_ops_per_second={:.6g}\nbytes_per_second={:.6g}\n"
      "kernel_seconds={:.6g}\nrun_seconds={:.6g}\n",
      flops_per_second, element_ops_per_second, bytes_per_second, kernel_seconds, run_seconds);
  return text;
}

absl::StatusOr<CostModel> CostModel::Parse(absl::string_view text, const Mesh& mesh) {
  CostModel model = Default(mesh);
  std::vector<std::vector<bool>> seen(mesh.axis_count(), std::vector<bool>(kCollectiveKinds));
  bool has_flops = false;
  bool has_element_ops = false;
  const auto bad = [](absl::string_view line) {
    return absl::InvalidArgumentError(fmt::format("bad cost model line '{}'", std::string(line)));
  };
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    std::vector<absl::string_view> words = absl::StrSplit(line, ' ', absl::SkipWhitespace());
    if (words.size() == 1 && absl::ConsumePrefix(&words[0], "flops_per_second=")) {
      if (!absl::SimpleAtod(words[0], &model.flops_per_second) || !(model.flops_per_second > 0)) {
        return bad(line);
      }
      has_flops = true;
      continue;
    }
    if (words.size() == 1 && absl::ConsumePrefix(&words[0], "element_ops_per_second=")) {
      if (!absl::SimpleAtod(words[0], &model.element_ops_per_second) ||
          !(model.element_ops_per_second > 0) || !std::isfinite(model.element_ops_per_second)) {
        return bad(line);
      }
      has_element_ops = true;
      continue;
    }
    double* field = nullptr;
    for (auto [prefix, member] : {std::pair{"bytes_per_second=", &model.bytes_per_second},
                                  std::pair{"kernel_seconds=", &model.kernel_seconds},
                                  std::pair{"run_seconds=", &model.run_seconds}}) {
      if (words.size() == 1 && absl::ConsumePrefix(&words[0], prefix)) field = member;
    }
    if (field != nullptr) {
      if (!absl::SimpleAtod(words[0], field) || !(*field >= 0) || !std::isfinite(*field)) {
        return bad(line);
      }
      continue;
    }
    int64_t axis = 0;
    if (words.size() != 5 || words[0] != "axis" || !absl::SimpleAtoi(words[1], &axis) || axis < 0 ||
        axis >= mesh.axis_count() || !absl::ConsumePrefix(&words[3], "alpha_s=") ||
        !absl::ConsumePrefix(&words[4], "beta_s_per_byte=")) {
      return bad(line);
    }
    int kind = 0;
    while (kind < kCollectiveKinds &&
           CollectiveKindName(static_cast<CollectiveKind>(kind)) != words[2]) {
      ++kind;
    }
    AlphaBeta& cost = model.axes[axis][kind < kCollectiveKinds ? kind : 0];
    if (kind == kCollectiveKinds || !absl::SimpleAtod(words[3], &cost.alpha) ||
        !absl::SimpleAtod(words[4], &cost.beta) || !(cost.alpha >= 0) || !(cost.beta >= 0) ||
        !std::isfinite(cost.alpha) || !std::isfinite(cost.beta)) {
      return bad(line);
    }
    seen[axis][kind] = true;
  }
  for (const std::vector<bool>& kinds : seen) {
    if (std::find(kinds.begin(), kinds.end(), false) != kinds.end() || !has_flops) {
      return absl::InvalidArgumentError(fmt::format(
          "the cost model does not cover every axis and collective of {}", mesh.ToString()));
    }
  }
  if (!has_element_ops) model.element_ops_per_second = model.flops_per_second;
  return model;
}

}  // namespace vkspmd::spmd
