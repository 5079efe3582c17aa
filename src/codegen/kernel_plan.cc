// The plan's decisions that kernels and src/exec must agree on.
#include "src/codegen/kernel_plan.h"

namespace vkspmd::codegen {

TexelFormat TexelReadFormat(const ProgramPlan& plan, const BufferPlan& buffer) {
  if (!plan.texel_reads || buffer.parts() != 1) return TexelFormat::kNone;
  if ((buffer.element_count() + 3) / 4 > plan.max_texel_buffer_elements) return TexelFormat::kNone;
  const bool is_signed = ir::IsSignedInteger(buffer.shape.dtype());
  switch (buffer.element_bytes) {
    case 1:
      return is_signed ? TexelFormat::kInt8 : TexelFormat::kUint8;
    case 2:
      return is_signed ? TexelFormat::kInt16 : TexelFormat::kUint16;
    case 4:
      switch (buffer.shape.dtype()) {
        case ir::DType::kF32:
          return TexelFormat::kFloat32;
        case ir::DType::kS32:
          return TexelFormat::kInt32;
        case ir::DType::kU32:
        case ir::DType::kPred:
          return TexelFormat::kUint32;
        default:
          return TexelFormat::kNone;
      }
    default:
      return TexelFormat::kNone;
  }
}

}  // namespace vkspmd::codegen
