// Shader toolchain: run-time GLSL compilation, SPIR-V validation, and the embedded kernels.
#include "src/codegen/shader_compiler.h"

#include <gtest/gtest.h>

#include "tests/shaders/embedded_shaders.h"

namespace vkspmd::codegen {
namespace {

constexpr char kValid[] = R"(#version 460
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { float data[]; };
void main() { data[gl_GlobalInvocationID.x] *= 2.0; }
)";

TEST(ShaderCompilerTest, CompilesValidGlslToValidSpirv) {
  absl::StatusOr<std::vector<uint32_t>> spirv = CompileComputeShader(kValid, "double");
  ASSERT_TRUE(spirv.ok()) << spirv.status();
  ASSERT_GT(spirv->size(), 5u);
  EXPECT_EQ((*spirv)[0], 0x07230203u);
  EXPECT_TRUE(ValidateSpirv(*spirv, "double").ok());
}

TEST(ShaderCompilerTest, SyntaxErrorQuotesTheFailingLine) {
  constexpr char kBroken[] = R"(#version 460
layout(local_size_x = 64) in;
layout(set = 0, binding = 0) buffer Data { float data[]; };
void main() {
  data[gl_GlobalInvocationID.x] = undefined_value + 1.0;
}
)";
  absl::Status status = CompileComputeShader(kBroken, "broken").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  std::string message(status.message());
  EXPECT_NE(message.find("kernel 'broken' failed to compile"), std::string::npos) << message;
  EXPECT_NE(message.find("line 5"), std::string::npos) << message;
  EXPECT_NE(message.find("undefined_value"), std::string::npos) << message;
  EXPECT_NE(message.find("5 |   data[gl_GlobalInvocationID.x] = undefined_value + 1.0;"),
            std::string::npos)
      << message;
}

TEST(ShaderCompilerTest, InvalidSpirvIsRejectedWithTheKernelName) {
  std::vector<uint32_t> spirv = *CompileComputeShader(kValid, "double");
  std::vector<uint32_t> truncated(spirv.begin(), spirv.begin() + spirv.size() / 2);
  absl::Status status = ValidateSpirv(truncated, "truncated");
  EXPECT_EQ(status.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_NE(status.message().find("kernel 'truncated' is not valid"), absl::string_view::npos)
      << status;
  EXPECT_FALSE(ValidateSpirv({}, "empty").ok());
  const std::vector<uint32_t> garbage = {0x07230203, 0x00010000, 0, 99, 0, 12345};
  EXPECT_FALSE(ValidateSpirv(garbage, "garbage").ok());
}

TEST(EmbeddedShadersTest, EveryEmbeddedKernelIsValidSpirv) {
  std::vector<absl::string_view> names = shaders::EmbeddedShaderNames();
  EXPECT_GE(names.size(), 4u);
  for (absl::string_view name : names) {
    absl::StatusOr<std::span<const uint32_t>> spirv = shaders::EmbeddedShader(name);
    ASSERT_TRUE(spirv.ok()) << spirv.status();
    EXPECT_TRUE(ValidateSpirv(*spirv, name).ok()) << name;
  }
}

TEST(EmbeddedShadersTest, UnknownNameListsTheKnownOnes) {
  absl::Status status = shaders::EmbeddedShader("no_such_kernel").status();
  EXPECT_EQ(status.code(), absl::StatusCode::kNotFound);
  EXPECT_NE(status.message().find("vector_add_f32"), absl::string_view::npos) << status;
}

}  // namespace
}  // namespace vkspmd::codegen
