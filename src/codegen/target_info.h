// What code generation may assume about a device: a plain struct filled by src/exec from the
// runtime's capability snapshot, so codegen never sees Vulkan.
#pragma once

#include <cstdint>

namespace vkspmd::codegen {

struct TargetInfo {
  uint32_t subgroup_size = 32;
  // Basic and shuffle subgroup operations in compute shaders: reductions then split each row over
  // a workgroup of subgroup_size lanes; without them one invocation reduces a row alone.
  bool subgroup_shuffle = false;
  uint32_t max_shared_memory_bytes = 32768;
  uint32_t max_workgroup_count_x = 65535;
  uint32_t max_workgroup_count_y = 65535;
  uint64_t max_storage_buffer_range = 1ull << 27;
  uint32_t max_storage_buffers_per_stage = 16;
  // Iterations one invocation may loop in total before the driver truncates (0: no limit known).
  uint32_t loop_iteration_limit = 0;
  // pred values live in device buffers as one byte each (8-bit storage and int8 arithmetic
  // available), else as a 4-byte 0/1. Chosen once per device, never per op.
  bool byte_predicates = false;
  // s8/u8 and s16/u16 buffers (8- and 16-bit storage with integer arithmetic of that width);
  // values are computed in 32 bits and wrapped back to their width after every op.
  bool int8_buffers = false;
  bool int16_buffers = false;
  bool int64 = false;    // shaderInt64: s64/u64.
  bool float64 = false;  // shaderFloat64: f64.
  // Kernels declare the DenormPreserve execution mode for 32-bit floats (the device reports
  // shaderDenormPreserveFloat32): without it a driver may flush f32 subnormals to zero (NVIDIA's
  // did), where the reference keeps them, bf16 values below 2^-126 among them.
  bool preserve_float32_denormals = false;
  // Kernels read their inputs through uniform texel buffers of 4-element texels (texelFetch)
  // instead of storage buffers, where a buffer's elements fit one (TexelReadFormat). CPU drivers:
  // llvmpipe loads a storage buffer lane by lane, inserting each lane's element into the vector
  // at a variable position (on AVX2, through the stack, a stalled store-to-load forwarding per
  // element), while a texel fetch is one vector load per lane: a 1024^3 dot went from 470 to 80 ms
  // on a 2-core Zen 3, an elementwise kernel of three inputs from 15.9 to 5.7 ms.
  bool texel_reads = false;
  uint64_t max_texel_buffer_elements = 0;  // maxTexelBufferElements: texels per view.
  // Dots by the shared-memory tiled kernel (GPUs: barriers are cheap and shared memory is fast)
  // instead of per-invocation register tiles reading operands directly (CPU drivers, where
  // barriers and shared memory are slow and the caches serve the reuse).
  bool shared_memory_dot = false;
  // A subgroup-scope cooperative-matrix (tensor core) product D = A.B + C with f16 A (m x k) and B
  // (k x n) and f32 C and D, as VK_NV_cooperative_matrix reports it (m == 0: none). Dots of f16
  // operands then use the cooperative-matrix kernel (dot_tiling.h: UseCooperativeMatrix). There
  // is no bf16 shape in the NV extension: bf16 dots keep the other kernels.
  struct MatrixShape {
    uint32_t m = 0, n = 0, k = 0;
  };
  MatrixShape cooperative_matrix_f16;
  // The cooperative-matrix kernel with its fragment loads, products and stores done by ordinary
  // code (one fragment's elements spread over the subgroup's lanes): tests its tiling, staging and
  // edges on devices without cooperative matrices (VKSPMD_DOT_KERNEL=cooperative_matrix_emulated).
  bool cooperative_matrix_emulated = false;
  // Dot kernels compute the elementwise consumers of their results before storing them
  // (dot_epilogue_fusion.h). VKSPMD_DOT_EPILOGUES=0 turns that off (src/exec; for comparisons).
  bool dot_epilogues = true;
  // Values per invocation a row kernel may keep in registers between its loops over the row
  // instead of computing them again in each (row_cache.h); 0: none. VKSPMD_ROW_CACHE_SLOTS
  // overrides it (src/exec).
  uint32_t row_cache_slots = 32;
  // Horizontal fusion (horizontal_fusion.h) on drivers that run every part of a fused dispatch in
  // each workgroup, the parts a workgroup does not compute under an empty mask (llvmpipe: its
  // arithmetic still runs): two kernels are merged only while the invocations each part runs
  // masked, summed over the parts, stay within this (about one dispatch's cost). 0: no limit
  // (GPUs branch on the workgroup's part). VKSPMD_MASKED_PART_INVOCATIONS overrides it (src/exec).
  uint64_t max_masked_part_invocations = 0;
};

}  // namespace vkspmd::codegen
