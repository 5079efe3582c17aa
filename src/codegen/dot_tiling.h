// How a dot kernel divides its result over workgroups (see DotTiling in kernel_plan.h): decided
// while planning, since the split of long contractions (split-K) adds a buffer and a kernel.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "src/codegen/kernel_plan.h"
#include "src/codegen/target_info.h"
#include "src/ir/instruction.h"

namespace vkspmd::codegen {

// Result rows per workgroup (the "uniform" side, whose values every lane uses) and columns per
// lane. llvmpipe loads every lane's element separately, whether or not the lanes share the
// address, so the cost is in loads per multiply-add. With subgroup shuffles (kShuffledRowsPerTile)
// each lane reads one contraction step of each row and the shuffles hand it to the others: one
// load per row per 8 steps. Measured at 1024^3 on llvmpipe (ms): rows x columns 4x4 290, 8x4
// 198, 8x8 153, 16x2 127, 16x4 110, 16x8 127, 32x4 107 (against 364 before, no shuffles, 4x4).
constexpr int64_t kRowsPerTile = 4;
constexpr int64_t kShuffledRowsPerTile = 16;
constexpr int64_t kColumnsPerLane = 4;
// Lanes per workgroup with shuffles (CPU drivers): 1024^3 ran the same with 16 as with 64 lanes,
// and small dots get 4x the workgroups to spread over the driver's threads.
constexpr int64_t kShuffledMaxLanes = 16;

// The shared-memory (GPU) variant: kSharedTile x kSharedTile results per workgroup, staged
// kSharedDepth contraction steps at a time, kSharedPerThread x kSharedPerThread per invocation.
// Dots that still give kSharedLargeWorkgroups workgroups with kSharedLargeTile tiles use those,
// with kSharedLargePerThread^2 results per invocation: more work per staged element, still 256
// invocations per workgroup. On an H100, 1024^3 went from 2.4 to 3.4 TFLOP/s and 2048^3 from
// 2.6 to 4.2, while 512^3 (16 such workgroups for 132 multiprocessors) fell from 1.9 to 0.85.
constexpr int64_t kSharedTile = 64;
constexpr int64_t kSharedDepth = 16;
constexpr int64_t kSharedPerThread = 4;
constexpr int64_t kSharedLargeTile = 128;
constexpr int64_t kSharedLargePerThread = 8;
constexpr int64_t kSharedLargeWorkgroups = 64;

// The cooperative-matrix variant: a workgroup of kMatrixWarpsM x kMatrixWarpsN subgroups, each
// kMatrixFrags x kMatrixFrags fragments; dots that still give kGpuWorkgroupTarget workgroups of
// the large shape (2 x 4 subgroups of 4 x 2 fragments: 128 x 128 with 16 x 16 fragments) use it.
// Slabs of kMatrixDepth contraction steps; rows of the staged tiles are padded by kMatrixPad
// halves (16 bytes, the loads' alignment) so that the subgroups' rows fall in different banks.
constexpr int64_t kMatrixWarpsM = 2;
constexpr int64_t kMatrixWarpsN = 2;
constexpr int64_t kMatrixFrags = 2;
constexpr int64_t kMatrixDepth = 32;
constexpr int64_t kMatrixPad = 8;
// GPU tiles (shared memory or cooperative matrices) split the contraction (split-K) while the
// result has fewer than kGpuWorkgroupTarget workgroups, in chunks of at least kGpuMinChunk steps:
// a skinny weight gradient (x^T.g, 64 x 64 over 256 rows) otherwise runs in one workgroup.
constexpr int64_t kGpuWorkgroupTarget = 128;
constexpr int64_t kGpuMinChunk = 64;

// Whether `dot` runs on `target`'s cooperative matrices: f16 operands and result, and
// each of rows, columns and contraction at least one fragment (smaller dots waste the tensor
// cores; they use the shared-memory kernel). Any size above that is padded through shared memory.
bool UseCooperativeMatrix(const ir::Instruction& dot, const DotOperands& operands,
                          const TargetInfo& target);

// Bytes of shared memory the cooperative-matrix variant with `tiling`'s shape declares: the
// staged f16 slabs of both operands and one f32 fragment per subgroup for the results' way out.
int64_t MatrixSharedBytes(const DotTiling& tiling);

// The view of `dot`'s operand `k` that reads the value in a buffer at the end of a chain of
// transposes and reshapes without buffers of their own (`in_buffer` says which values have
// one), or nullopt where the operand has a buffer itself, the chain ends in a value computed
// inline, or a reshape splits a dim into sizes that do not divide it.
std::optional<DotOperandView> ViewThrough(
    const ir::Instruction& dot, int64_t k,
    const std::function<bool(const ir::Instruction*)>& in_buffer);

// The view of `dot`'s operands: read through chains of transposes and reshapes (ViewThrough)
// where possible, else the operands themselves with their own shapes.
DotOperands ViewDotOperands(const ir::Instruction& dot,
                            const std::function<bool(const ir::Instruction*)>& in_buffer);

// The tiling of `dot` (reading `operands`) with at most `max_iterations` contraction steps per
// invocation.
DotTiling TileDot(const ir::Instruction& dot, const DotOperands& operands, const TargetInfo& target,
                  int64_t max_iterations);

// Whether the index flattened over `dims` of (row-major) `shape` runs through memory in aligned
// groups of 4 elements of 32 bits, or of f16/bf16 (4 x 16 bits, read as two words): its innermost
// dim is the shape's minor dim, of a multiple of 4 elements, so every other stride is a multiple
// of 4 too. CPU drivers read such runs as vec4 (dot_register_tiles.cc).
bool MinorRunsOfFour(const ir::Shape& shape, const std::vector<int64_t>& dims);

// The dims of a rank-`rank` operand that are neither batch nor contracting dims, in order.
std::vector<int64_t> FreeDims(int64_t rank, const std::vector<int64_t>& batch,
                              const std::vector<int64_t>& contracting);

}  // namespace vkspmd::codegen
