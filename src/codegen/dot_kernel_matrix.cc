// The dot kernel's cooperative-matrix (tensor core) variant, GL_NV_cooperative_matrix: f16
// operands staged through shared memory, f32 accumulators per subgroup (see DotTiling).
#include <string>

#include "absl/strings/str_cat.h"
#include "src/codegen/dot_kernel_context.h"
#include "src/codegen/dot_tiling.h"

namespace vkspmd::codegen {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// One operand's slab of `size` free elements (from `first`) by tiling.depth contraction steps
// (from k0), as this invocation's share: `count` elements of the float16_t array `name`, element j
// being the slab's element lane + j * threads. Consecutive invocations read consecutive addresses:
// along the contraction where it is the operand's minor dim, else along the free elements.
// Elements past the operand's edges or the chunk's end are zero, so the products need no edge
// cases. Loops over j rather than unrolled code: GPU compilers unroll them, and llvmpipe (which
// runs the emulated kernel in tests) compiles a kernel with barriers as coroutines, whose frames
// grow with every value live across a barrier (the unrolled kernel took minutes to compile).
struct Slab {
  const Side* side;
  std::string name;
  std::string first;
  std::string base;
  int64_t tile;   // Free elements per slab.
  int64_t size;   // The operand's free elements.
  int64_t count;  // Elements per invocation.
  bool contraction_minor;
  // The shared-memory index of free element `m`, step `q`.
  std::string (*shared_index)(const std::string& m, const std::string& q, int64_t stride);
  int64_t stride;
};

// The loop over the invocation's elements, declaring e (its index in the slab), m (free element)
// and q (contraction step), with `body` run for elements inside the slab.
std::string SlabLoop(const Slab& slab, int64_t threads, int64_t depth, const std::string& indent,
                     const std::string& body) {
  return absl::StrCat(indent, "for (uint j = 0u; j < ", slab.count, "u; ++j) {\n", indent,
                      "  uint e = lane + j * ", threads, "u;\n", indent, "  uint m = ",
                      slab.contraction_minor ? absl::StrCat("e / ", depth, "u")
                                             : absl::StrCat("e % ", slab.tile, "u"),
                      ";\n", indent, "  uint q = ",
                      slab.contraction_minor ? absl::StrCat("e % ", depth, "u")
                                             : absl::StrCat("e / ", slab.tile, "u"),
                      ";\n", indent, "  ",
                      (slab.count * threads > slab.tile * depth)
                          ? absl::StrCat("if (e < ", slab.tile * depth, "u) ")
                          : "",
                      body, "\n", indent, "}\n");
}

// Loads the slab at contraction step `k0` into the invocation's array.
std::string LoadSlab(const DotContext& context, const Slab& slab, int64_t threads, int64_t depth,
                     const std::string& k0, const std::string& indent) {
  const Side& side = *slab.side;
  return SlabLoop(
      slab, threads, depth, indent,
      absl::StrCat("{\n", indent, "    uint index = ", slab.first, " + m;\n", indent,
                   "    uint k = ", k0, " + q;\n", indent, "    ", slab.name, "[j] = (index < ",
                   slab.size, "u && k < k_end) ? float16_t(", side.value, "(", slab.base, " + ",
                   Offset(absl::StrCat("min(index, ", slab.size - 1, "u)"), side.shape, side.free),
                   " + ",
                   context.ContractionOffset(
                       side, absl::StrCat("min(k, ", context.tiling.contraction - 1, "u)")),
                   ")) : float16_t(0);\n", indent, "  }"));
}

// Writes the invocation's array to the slab's shared array.
std::string StoreSlab(const Slab& slab, const std::string& shared, int64_t threads, int64_t depth) {
  return SlabLoop(slab, threads, depth, "    ",
                  absl::StrCat(shared, "[", slab.shared_index("m", "q", slab.stride),
                               "] = ", slab.name, "[j];"));
}

// GLSL of the emulated fragments: `emulated_acc`, each lane's elements lane, lane + subgroup, ...
// of each of the subgroup's fragments (per_lane of them per fragment), and
// emulated_product(f, x, y): fragment f += the m x k fragment at element x of the lhs slab times
// the k x n fragment at element y of the rhs slab.
std::string EmulatedFragments(const DotTiling& tiling, const std::string& lhs_shared,
                              int64_t lhs_stride, const std::string& rhs_shared,
                              int64_t rhs_stride) {
  const int64_t fragment = tiling.matrix_m * tiling.matrix_n;
  const int64_t per_lane = CeilDiv(fragment, tiling.subgroup_size);
  return absl::StrCat(
      "float emulated_acc[", tiling.frags_m * tiling.frags_n * per_lane, "];\n",
      "void emulated_product(uint f, uint x, uint y) {\n", "  for (uint t = 0u; t < ", per_lane,
      "u; ++t) {\n", "    uint e = gl_SubgroupInvocationID + t * ", tiling.subgroup_size, "u;\n",
      "    if (e >= ", fragment, "u) break;\n    uint r = e / ", tiling.matrix_n,
      "u;\n    uint c = e % ", tiling.matrix_n, "u;\n    float sum = emulated_acc[f * ", per_lane,
      "u + t];\n    for (uint q = 0u; q < ", tiling.matrix_k, "u; ++q) {\n      sum += float(",
      lhs_shared, "[x + r * ", lhs_stride, "u + q]) * float(", rhs_shared, "[y + q * ", rhs_stride,
      "u + c]);\n    }\n    emulated_acc[f * ", per_lane, "u + t] = sum;\n  }\n}\n");
}

bool ContractionMinor(const Side& side) {
  const std::vector<int64_t> strides = ir::RowMajorStrides(side.shape.dimensions());
  return side.contracting.size() == 1 && strides[side.contracting[0]] == 1;
}

}  // namespace

// The workgroup computes a (warps_m * frags_m * M) x (warps_n * frags_n * N) block of the result:
// each slab of `depth` contraction steps of both operands is read into registers (the next slab's
// reads are issued before the current slab's products, so their latency overlaps the tensor
// cores), written to shared memory as f16 (lhs as [row][step], rhs as [step][column], rows padded
// by kMatrixPad halves), and each subgroup multiplies its fragments from there. Results leave
// through one f32 fragment of shared memory per subgroup, so edges and the f16 result's rounding
// are the ordinary store()'s.
std::string CooperativeMatrixTiles(const DotContext& context, KernelWriter& writer) {
  const DotTiling& tiling = context.tiling;
  writer.RequireCooperativeMatrix(/*emulated=*/tiling.matrix_emulated);
  const int64_t m_size = tiling.matrix_m, n_size = tiling.matrix_n, k_size = tiling.matrix_k;
  const int64_t depth = tiling.depth;
  const int64_t warps = tiling.warps_m * tiling.warps_n;
  const int64_t threads = warps * tiling.subgroup_size;
  const int64_t tile_rows = tiling.warps_m * tiling.frags_m * m_size;
  const int64_t tile_columns = tiling.warps_n * tiling.frags_n * n_size;
  const int64_t lhs_stride = depth + kMatrixPad;
  const int64_t rhs_stride = tile_columns + kMatrixPad;
  const std::string lhs_shared = writer.AddShared("float16_t", tile_rows * lhs_stride);
  const std::string rhs_shared = writer.AddShared("float16_t", depth * rhs_stride);
  const std::string out_shared = writer.AddShared("float", warps * m_size * n_size);
  const Slab lhs{&context.lhs,
                 "a",
                 "row0",
                 "lhs_base",
                 tile_rows,
                 tiling.rows,
                 CeilDiv(tile_rows * depth, threads),
                 ContractionMinor(context.lhs),
                 [](const std::string& m, const std::string& q, int64_t stride) {
                   return absl::StrCat("(", m, ") * ", stride, "u + ", q);
                 },
                 lhs_stride};
  const Slab rhs{&context.rhs,
                 "b",
                 "column0",
                 "rhs_base",
                 tile_columns,
                 tiling.columns,
                 CeilDiv(tile_columns * depth, threads),
                 ContractionMinor(context.rhs),
                 [](const std::string& m, const std::string& q, int64_t stride) {
                   return absl::StrCat("(", q, ") * ", stride, "u + ", m);
                 },
                 rhs_stride};
  const std::string acc_type =
      absl::StrCat("fcoopmatNV<32, gl_ScopeSubgroup, ", m_size, ", ", n_size, ">");
  std::string body = context.Workgroup();
  absl::StrAppend(&body, "  uint lane = gl_LocalInvocationID.x;\n  uint warp = gl_SubgroupID;\n",
                  "  uint warp_m = warp / ", tiling.warps_n, "u;\n  uint warp_n = warp % ",
                  tiling.warps_n, "u;\n  uint row0 = tile * ", tile_rows,
                  "u;\n  uint column0 = block * ", tile_columns,
                  "u;\n  uint lhs_base = ", context.BatchOffset(context.lhs),
                  ";\n  uint rhs_base = ", context.BatchOffset(context.rhs), ";\n");
  const int64_t fragment = m_size * n_size;
  const bool emulated = tiling.matrix_emulated;
  // Emulated: each lane holds the fragment's elements lane, lane + subgroup, ... (`per_lane`).
  const int64_t per_lane = CeilDiv(fragment, tiling.subgroup_size);
  if (emulated) {
    writer.AddFunction(EmulatedFragments(tiling, lhs_shared, lhs_stride, rhs_shared, rhs_stride));
    absl::StrAppend(&body, "  for (uint t = 0u; t < ", tiling.frags_m * tiling.frags_n * per_lane,
                    "u; ++t) emulated_acc[t] = 0.0;\n");
  }
  for (int64_t i = 0; i < tiling.frags_m && !emulated; ++i) {
    for (int64_t j = 0; j < tiling.frags_n; ++j) {
      absl::StrAppend(&body, "  ", acc_type, " acc", i, "_", j, " = ", acc_type, "(0.0);\n");
    }
  }
  // Where fragment (i, j)'s operands start in the slabs (element offsets, rows `stride` apart).
  const auto lhs_offset = [&](const std::string& i, const std::string& kk) {
    return absl::StrCat("(warp_m * ", tiling.frags_m * m_size, "u + (", i, ") * ", m_size, "u) * ",
                        lhs_stride, "u + ", kk);
  };
  const auto rhs_offset = [&](const std::string& j, const std::string& kk) {
    return absl::StrCat("(", kk, ") * ", rhs_stride, "u + warp_n * ", tiling.frags_n * n_size,
                        "u + (", j, ") * ", n_size, "u");
  };
  absl::StrAppend(&body, "  float16_t a[", lhs.count, "];\n  float16_t b[", rhs.count, "];\n");
  absl::StrAppend(
      &body, LoadSlab(context, lhs, threads, depth, "k_begin", "  "),
      LoadSlab(context, rhs, threads, depth, "k_begin", "  "),
      "  for (uint k0 = k_begin; k0 < k_end; k0 += ", depth, "u) {\n",
      StoreSlab(lhs, lhs_shared, threads, depth), StoreSlab(rhs, rhs_shared, threads, depth),
      "    barrier();\n", "    if (k0 + ", depth, "u < k_end) {\n",
      LoadSlab(context, lhs, threads, depth, absl::StrCat("k0 + ", depth, "u"), "      "),
      LoadSlab(context, rhs, threads, depth, absl::StrCat("k0 + ", depth, "u"), "      "),
      "    }\n");
  // Emulated: one loop over the steps and fragments (unrolled, llvmpipe's compile takes minutes).
  if (emulated) {
    absl::StrAppend(&body, "    for (uint kk = 0u; kk < ", depth, "u; kk += ", k_size,
                    "u) {\n      for (uint f = 0u; f < ", tiling.frags_m * tiling.frags_n,
                    "u; ++f) emulated_product(f, ",
                    lhs_offset(absl::StrCat("f / ", tiling.frags_n, "u"), "kk"), ", ",
                    rhs_offset(absl::StrCat("f % ", tiling.frags_n, "u"), "kk"), ");\n    }\n");
  }
  for (int64_t kk = 0; kk < depth && !emulated; kk += k_size) {
    absl::StrAppend(&body, "    {\n");
    for (int64_t i = 0; i < tiling.frags_m; ++i) {
      absl::StrAppend(&body, "      fcoopmatNV<16, gl_ScopeSubgroup, ", m_size, ", ", k_size, "> x",
                      i, ";\n      coopMatLoadNV(x", i, ", ", lhs_shared, ", ",
                      lhs_offset(absl::StrCat(i, "u"), absl::StrCat(kk, "u")), ", ", lhs_stride,
                      "u, false);\n");
    }
    for (int64_t j = 0; j < tiling.frags_n; ++j) {
      absl::StrAppend(&body, "      fcoopmatNV<16, gl_ScopeSubgroup, ", k_size, ", ", n_size, "> y",
                      j, ";\n      coopMatLoadNV(y", j, ", ", rhs_shared, ", ",
                      rhs_offset(absl::StrCat(j, "u"), absl::StrCat(kk, "u")), ", ", rhs_stride,
                      "u, false);\n");
    }
    for (int64_t i = 0; i < tiling.frags_m; ++i) {
      for (int64_t j = 0; j < tiling.frags_n; ++j) {
        const std::string acc = absl::StrCat("acc", i, "_", j);
        absl::StrAppend(&body, "      ", acc, " = coopMatMulAddNV(x", i, ", y", j, ", ", acc,
                        ");\n");
      }
    }
    absl::StrAppend(&body, "    }\n");
  }
  absl::StrAppend(&body, "    barrier();\n  }\n");
  // Each fragment through the subgroup's f32 fragment of shared memory, then stored element by
  // element where it lies inside the result. Only the subgroup shares that memory, so subgroup
  // barriers order it (workgroup barriers there made llvmpipe's coroutine compile take minutes).
  for (int64_t i = 0; i < tiling.frags_m; ++i) {
    for (int64_t j = 0; j < tiling.frags_n; ++j) {
      const std::string acc = absl::StrCat("acc", i, "_", j);
      absl::StrAppend(&body,
                      emulated
                          ? absl::StrCat("  for (uint t = 0u; t < ", per_lane,
                                         "u; ++t) {\n    uint e = gl_SubgroupInvocationID + t * ",
                                         tiling.subgroup_size, "u;\n    if (e < ", fragment, "u) ",
                                         out_shared, "[warp * ", fragment, "u + e] = emulated_acc[",
                                         (i * tiling.frags_n + j) * per_lane, "u + t];\n  }\n")
                          : absl::StrCat("  coopMatStoreNV(", acc, ", ", out_shared, ", warp * ",
                                         fragment, "u, ", n_size, "u, false);\n"),
                      "  subgroupMemoryBarrierShared();\n  subgroupBarrier();\n",
                      "  for (uint e = gl_SubgroupInvocationID; e < ", fragment,
                      "u; e += ", tiling.subgroup_size, "u) {\n    uint row = row0 + warp_m * ",
                      tiling.frags_m * m_size, "u + ", i * m_size, "u + e / ", n_size,
                      "u;\n    uint column = column0 + warp_n * ", tiling.frags_n * n_size, "u + ",
                      j * n_size, "u + e % ", n_size, "u;\n    if (row < ", tiling.rows,
                      "u && column < ", tiling.columns, "u) ", context.store, "(out_base + row * ",
                      tiling.columns, "u + column, ", out_shared, "[warp * ", fragment,
                      "u + e]);\n  }\n  subgroupMemoryBarrierShared();\n  subgroupBarrier();\n");
    }
  }
  return body;
}

}  // namespace vkspmd::codegen
