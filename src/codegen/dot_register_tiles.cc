// The dot kernel's variant for CPU drivers (llvmpipe): register tiles per invocation, operands
// read straight from their buffers, subgroup shuffles instead of shared memory and barriers.
#include <algorithm>
#include <functional>
#include <optional>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "src/codegen/dot_kernel_context.h"
#include "src/codegen/dot_tiling.h"
#include "src/codegen/glsl_types.h"
#include "src/codegen/kernel_writer.h"

namespace vkspmd::codegen {
namespace {

// How a round of `steps` contraction steps reads the uniform side's rows (llvmpipe runs every
// load instruction as a loop over the lanes, so the count of loads is the cost):
// - one step of every row per lane (a load per row; kScalar);
// - vec4 runs along the contraction where it is the operand's minor dim (x.W's x, g.W's g): each
//   lane reads 4 steps of one row, a load covering 4 rows (kContraction);
// - vec4 runs of rows where the rows are the minor dim (x^T.g's x): each lane reads 4 rows at
//   one step (kRows).
// Subgroup shuffles then hand every lane the value of row t at step s.
enum class UniformReads { kScalar, kContraction, kRows };

struct Round {
  std::string setup;  // Before the contraction loop.
  std::string loads;  // At the top of each round (k0: its first step).
  std::function<std::string(int64_t row, int64_t step)> value;
};

Round UniformRound(const DotContext& context, KernelWriter& writer, const Side& uniform,
                   int64_t uniform_size) {
  const DotTiling& tiling = context.tiling;
  const int64_t rows = tiling.rows_per_tile;
  const int64_t steps = tiling.subgroup;
  const std::string& type = context.type;
  UniformReads mode = UniformReads::kScalar;
  std::optional<KernelWriter::VectorFunction> vector;
  // Runs of 4 need rounds and chunks of whole runs; runs of rows cover the tile's rows in groups
  // of 4 spread evenly over the lanes.
  const int64_t groups = rows / 4;
  if (steps % 4 == 0 && tiling.chunk % 4 == 0) {
    if (MinorRunsOfFour(uniform.shape, uniform.contracting)) {
      mode = UniformReads::kContraction;
    } else if (MinorRunsOfFour(uniform.shape, uniform.free) && rows % 4 == 0 &&
               steps % groups == 0) {
      mode = UniformReads::kRows;
    }
    if (mode != UniformReads::kScalar) vector = writer.VectorRead(uniform.operand);
    if (!vector) mode = UniformReads::kScalar;
  }
  Round round;
  if (mode == UniformReads::kScalar) {
    absl::StrAppend(&round.loads, "    uint uk = ",
                    context.ContractionOffset(uniform, "k0 + gl_SubgroupInvocationID"), ";\n");
    for (int64_t t = 0; t < rows; ++t) {
      absl::StrAppend(&round.loads, "    ", type, " a", t, " = ", uniform.value, "(uo", t,
                      " + uk);\n");
    }
    round.value = [](int64_t t, int64_t s) {
      return absl::StrCat("subgroupShuffle(a", t, ", ", s, "u)");
    };
    return round;
  }
  if (mode == UniformReads::kContraction) {
    // Lane i reads steps 4 * (i % quarter) .. + 3 of row 4 * j + i / quarter in load j.
    const int64_t quarter = steps / 4;
    absl::StrAppend(&round.setup, "  uint ur = gl_SubgroupInvocationID / ", quarter,
                    "u;\n  uint uh = (gl_SubgroupInvocationID % ", quarter, "u) * 4u;\n");
    for (int64_t j = 0; j < (rows + 3) / 4; ++j) {
      absl::StrAppend(&round.setup, "  uint uv", j, " = uniform_base + ",
                      Offset(absl::StrCat("min(tile * ", rows, "u + ", 4 * j, "u + ur, ",
                                          uniform_size - 1, "u)"),
                             uniform.shape, uniform.free),
                      ";\n");
    }
    absl::StrAppend(&round.loads, "    uint uk = ", context.ContractionOffset(uniform, "k0 + uh"),
                    ";\n");
    for (int64_t j = 0; j < (rows + 3) / 4; ++j) {
      absl::StrAppend(&round.loads, "    ", vector->type, " av", j, " = ", vector->name, "((uv", j,
                      " + uk) / 4u);\n");
    }
    round.value = [type, quarter](int64_t t, int64_t s) {
      return absl::StrCat("subgroupShuffle(", type, "(av", t / 4, "[", s % 4, "]), ",
                          (t % 4) * quarter + s / 4, "u)");
    };
    return round;
  }
  // kRows: lane i reads rows 4 * (i % groups) .. + 3 at step per_load * j + i / groups in load
  // j. A group past the side's end is moved back onto its last 4 rows: those rows are not stored.
  const int64_t per_load = steps / groups;
  absl::StrAppend(&round.setup, "  uint uq = gl_SubgroupInvocationID / ", groups,
                  "u;\n  uint ug = uniform_base + ",
                  Offset(absl::StrCat("min(tile * ", rows, "u + (gl_SubgroupInvocationID % ",
                                      groups, "u) * 4u, ", uniform_size - 4, "u)"),
                         uniform.shape, uniform.free),
                  ";\n");
  for (int64_t j = 0; j < groups; ++j) {
    absl::StrAppend(
        &round.loads, "    ", vector->type, " av", j, " = ", vector->name, "((ug + ",
        context.ContractionOffset(uniform, absl::StrCat("k0 + ", per_load * j, "u + uq")),
        ") / 4u);\n");
  }
  round.value = [type, groups, per_load](int64_t t, int64_t s) {
    return absl::StrCat("subgroupShuffle(", type, "(av", s / per_load, "[", t % 4, "]), ",
                        (s % per_load) * groups + t / 4, "u)");
  };
  return round;
}

}  // namespace

std::string RegisterTiles(const DotContext& context, KernelWriter& writer) {
  const DotTiling& tiling = context.tiling;
  const std::string& type = context.type;
  const bool swapped = tiling.swapped;
  const Side& uniform = swapped ? context.rhs : context.lhs;
  const Side& lane_side = swapped ? context.lhs : context.rhs;
  const int64_t uniform_size = swapped ? tiling.columns : tiling.rows;
  const int64_t lane_size = swapped ? tiling.rows : tiling.columns;
  const int64_t rows = tiling.rows_per_tile;
  const int64_t per_lane = tiling.per_lane;
  const int64_t lanes = tiling.lanes;
  std::string body = context.Workgroup();
  absl::StrAppend(&body, "  uint lane = gl_LocalInvocationID.x;\n  uint uniform_base = ",
                  context.BatchOffset(uniform),
                  ";\n  uint lane_base = ", context.BatchOffset(lane_side), ";\n");
  for (int64_t t = 0; t < rows; ++t) {
    absl::StrAppend(
        &body, "  uint u", t, " = tile * ", rows, "u + ", t, "u;\n", "  uint uo", t,
        " = uniform_base + ",
        Offset(absl::StrCat("min(u", t, ", ", uniform_size - 1, "u)"), uniform.shape, uniform.free),
        ";\n");
  }
  if (tiling.lane_runs) {
    // The lane's run starts at `start`, moved back to end within the side (`first`): the run's
    // elements before `start` belong to the previous lane, which stores them.
    absl::StrAppend(&body, "  uint start = block * ", lanes * per_lane, "u + lane * ", per_lane,
                    "u;\n  uint first = min(start, ", lane_size - per_lane, "u);\n");
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&body, "  uint l", c, " = first + ", c, "u;\n  uint lo", c,
                      " = lane_base + l", c, ";\n");
    }
  } else {
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&body, "  uint l", c, " = block * ", lanes * per_lane, "u + lane + ",
                      c * lanes, "u;\n", "  uint lo", c, " = lane_base + ",
                      Offset(absl::StrCat("min(l", c, ", ", lane_size - 1, "u)"), lane_side.shape,
                             lane_side.free),
                      ";\n");
    }
  }
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&body, "  ", type, " acc", t, "_", c, " = ", type, "(0);\n");
    }
  }
  // A run of 4 is one vector load where it starts at a multiple of 4: the lane side's free dims
  // are its trailing dims, so its other dims' strides are multiples of lane_size.
  std::optional<KernelWriter::VectorFunction> vector;
  if (tiling.lane_runs && per_lane == 4 && lane_size % 4 == 0) {
    vector = writer.VectorRead(lane_side.operand);
  }
  // Lanes' columns strided by `lanes` whose contraction is the minor dim: each column's 4 steps
  // are one vector load (x.W^T's W, read once per 4 steps of a round).
  std::optional<KernelWriter::VectorFunction> step_vector;
  if (!tiling.lane_runs && tiling.subgroup % 4 == 0 && tiling.subgroup > 0 &&
      tiling.chunk % 4 == 0 && MinorRunsOfFour(lane_side.shape, lane_side.contracting)) {
    step_vector = writer.VectorRead(lane_side.operand);
  }
  // Declares the lane's values y0, y1, ... at contraction offset `lk`.
  const auto lane_values = [&](const std::string& indent) {
    std::string code;
    if (vector) {
      absl::StrAppend(&code, indent, vector->type, " yv = ", vector->name, "((lo0 + lk) / 4u);\n");
    }
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&code, indent, type, " y", c, " = ",
                      vector ? absl::StrCat(type, "(yv[", c, "])")
                             : absl::StrCat(lane_side.value, "(lo", c, " + lk)"),
                      ";\n");
    }
    return code;
  };
  std::string tail_begin = "k_begin";
  if (tiling.subgroup > 0) {
    const int64_t steps = tiling.subgroup;
    writer.RequireSubgroups();
    tail_begin = "k_full";
    const Round round = UniformRound(context, writer, uniform, uniform_size);
    absl::StrAppend(&body, round.setup, "  uint k_full = k_begin + ((k_end - k_begin) / ", steps,
                    "u) * ", steps, "u;\n  for (uint k0 = k_begin; k0 < k_full; k0 += ", steps,
                    "u) {\n", round.loads);
    for (int64_t j = 0; j < steps; ++j) {
      if (step_vector && j % 4 == 0) {
        absl::StrAppend(&body, "    uint lk", j, " = ",
                        context.ContractionOffset(lane_side, absl::StrCat("k0 + ", j, "u")), ";\n");
        for (int64_t c = 0; c < per_lane; ++c) {
          absl::StrAppend(&body, "    ", step_vector->type, " ys", j, "_", c, " = ",
                          step_vector->name, "((lo", c, " + lk", j, ") / 4u);\n");
        }
      }
      absl::StrAppend(&body, "    {\n");
      if (step_vector) {
        for (int64_t c = 0; c < per_lane; ++c) {
          absl::StrAppend(&body, "      ", type, " y", c, " = ", type, "(ys", j - j % 4, "_", c,
                          "[", j % 4, "]);\n");
        }
      } else {
        absl::StrAppend(&body, "      uint lk = ",
                        context.ContractionOffset(lane_side, absl::StrCat("k0 + ", j, "u")), ";\n",
                        lane_values("      "));
      }
      for (int64_t t = 0; t < rows; ++t) {
        absl::StrAppend(&body, "      ", type, " x", t, " = ", round.value(t, j), ";\n");
        for (int64_t c = 0; c < per_lane; ++c) {
          absl::StrAppend(&body, "      acc", t, "_", c, " += x", t, " * y", c, ";\n");
        }
      }
      absl::StrAppend(&body, "    }\n");
    }
    absl::StrAppend(&body, "  }\n");
  }
  absl::StrAppend(&body, "  for (uint r = ", tail_begin, "; r < k_end; ++r) {\n",
                  "    uint uk = ", context.ContractionOffset(uniform, "r"),
                  ";\n    uint lk = ", context.ContractionOffset(lane_side, "r"), ";\n",
                  lane_values("    "));
  for (int64_t t = 0; t < rows; ++t) {
    absl::StrAppend(&body, "    ", type, " x", t, " = ", uniform.value, "(uo", t, " + uk);\n");
    for (int64_t c = 0; c < per_lane; ++c) {
      absl::StrAppend(&body, "    acc", t, "_", c, " += x", t, " * y", c, ";\n");
    }
  }
  absl::StrAppend(&body, "  }\n");
  if (!context.store_runs_of_four.empty()) {
    // Each row's 4 results of the lane at once (dot_kernel.cc: RunsOfFourToTheEpilogue): runs
    // start at multiples of 4 and the row's length is a multiple of 4, so a lane whose run starts
    // inside the row has all 4 of its columns, and the others (past the end) have none.
    const std::string vector_type = Vec4Type(type);
    std::vector<std::string> us, runs;
    for (int64_t t = 0; t < rows; ++t) {
      us.push_back(absl::StrCat("u", t));
      runs.push_back(
          absl::StrCat(vector_type, "(acc", t, "_0, acc", t, "_1, acc", t, "_2, acc", t, "_3)"));
    }
    absl::StrAppend(&body, "  uint us[", rows, "] = uint[](", absl::StrJoin(us, ", "), ");\n");
    absl::StrAppend(&body, "  ", vector_type, " runs[", rows, "] = ", vector_type, "[](",
                    absl::StrJoin(runs, ", "), ");\n");
    absl::StrAppend(&body, "  if (start < ", lane_size, "u) {\n    for (uint t = 0u; t < ", rows,
                    "u; ++t) {\n      if (us[t] < ", uniform_size, "u) ",
                    context.store_runs_of_four, "(out_base + us[t] * ", tiling.columns,
                    "u + start, runs[t]);\n    }\n  }\n");
    return body;
  }
  if (context.store != "store") {
    // An epilogue (an optimizer's update, a GELU) is one call per element of the tile. Written
    // out, each call is inlined: llvmpipe compiled a 16 x 4 tile of AdamW updates for seconds
    // (4-5 s per kernel, at the first dispatch). A loop over the tile's elements compiles one
    // copy; the elements come from arrays (run time: see docs/performance.md).
    std::vector<std::string> us, ls, accs;
    for (int64_t t = 0; t < rows; ++t) us.push_back(absl::StrCat("u", t));
    for (int64_t c = 0; c < per_lane; ++c) ls.push_back(absl::StrCat("l", c));
    for (int64_t t = 0; t < rows; ++t) {
      for (int64_t c = 0; c < per_lane; ++c) accs.push_back(absl::StrCat("acc", t, "_", c));
    }
    const std::string lane_check =
        tiling.lane_runs ? "lc >= start" : absl::StrCat("lc < ", lane_size, "u");
    absl::StrAppend(&body, "  uint us[", rows, "] = uint[](", absl::StrJoin(us, ", "), ");\n");
    absl::StrAppend(&body, "  uint ls[", per_lane, "] = uint[](", absl::StrJoin(ls, ", "), ");\n");
    absl::StrAppend(&body, "  ", type, " accs[", rows * per_lane, "] = ", type, "[](",
                    absl::StrJoin(accs, ", "), ");\n");
    absl::StrAppend(&body, "  for (uint e = 0u; e < ", rows * per_lane, "u; ++e) {\n",
                    "    uint ut = us[e / ", per_lane, "u];\n    uint lc = ls[e % ", per_lane,
                    "u];\n    if (ut < ", uniform_size, "u && ", lane_check, ") ", context.store,
                    "(out_base + ", swapped ? "lc" : "ut", " * ", tiling.columns, "u + ",
                    swapped ? "ut" : "lc", ", accs[e]);\n  }\n");
    return body;
  }
  for (int64_t t = 0; t < rows; ++t) {
    for (int64_t c = 0; c < per_lane; ++c) {
      const std::string row = swapped ? absl::StrCat("l", c) : absl::StrCat("u", t);
      const std::string column = swapped ? absl::StrCat("u", t) : absl::StrCat("l", c);
      const std::string lane_check = tiling.lane_runs ? absl::StrCat("l", c, " >= start")
                                                      : absl::StrCat("l", c, " < ", lane_size, "u");
      absl::StrAppend(&body, "  if (u", t, " < ", uniform_size, "u && ", lane_check, ") ",
                      context.store, "(out_base + ", row, " * ", tiling.columns, "u + ", column,
                      ", acc", t, "_", c, ");\n");
    }
  }
  return body;
}

}  // namespace vkspmd::codegen
