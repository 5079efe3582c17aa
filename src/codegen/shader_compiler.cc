// glslang and SPIRV-Tools behind two functions.
#include "src/codegen/shader_compiler.h"

#include <glslang/Public/ResourceLimits.h>
#include <glslang/Public/ShaderLang.h>
#include <glslang/SPIRV/GlslangToSpv.h>
#include <glslang/build_info.h>

#include <mutex>
#include <spirv-tools/libspirv.hpp>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace vkspmd::codegen {
namespace {

std::once_flag glslang_initialized;
// glslang keeps process-wide state in its front end; compiles are serialised to stay safe.
std::mutex glslang_mutex;

// Turns glslang's "ERROR: 0:7: 'x' : undeclared identifier" lines into messages that quote the
// GLSL source line they point at.
std::string DescribeGlslErrors(absl::string_view log, absl::string_view glsl) {
  std::vector<absl::string_view> source_lines = absl::StrSplit(glsl, '\n');
  std::string described;
  for (absl::string_view line : absl::StrSplit(log, '\n', absl::SkipWhitespace())) {
    absl::string_view rest = line;
    if (!absl::ConsumePrefix(&rest, "ERROR: ")) continue;
    std::vector<absl::string_view> parts = absl::StrSplit(rest, absl::MaxSplits(':', 2));
    int line_number = 0;
    if (parts.size() == 3 && absl::SimpleAtoi(parts[1], &line_number) && line_number > 0 &&
        line_number <= static_cast<int>(source_lines.size())) {
      absl::StrAppend(&described, "\n  line ", line_number, ":", parts[2], "\n    ", line_number,
                      " | ", source_lines[line_number - 1]);
    } else {
      absl::StrAppend(&described, "\n  ", rest);
    }
  }
  return described.empty() ? std::string(log) : described;
}

}  // namespace

absl::StatusOr<std::vector<uint32_t>> CompileComputeShader(absl::string_view glsl,
                                                           absl::string_view name) {
  std::call_once(glslang_initialized, [] { glslang::InitializeProcess(); });
  std::vector<uint32_t> spirv;
  {
    std::lock_guard<std::mutex> lock(glslang_mutex);
    glslang::TShader shader(EShLangCompute);
    const char* text = glsl.data();
    const int length = static_cast<int>(glsl.size());
    shader.setStringsWithLengths(&text, &length, 1);
    shader.setEnvInput(glslang::EShSourceGlsl, EShLangCompute, glslang::EShClientVulkan, 100);
    shader.setEnvClient(glslang::EShClientVulkan, glslang::EShTargetVulkan_1_2);
    shader.setEnvTarget(glslang::EShTargetSpv, glslang::EShTargetSpv_1_5);
    const auto messages = static_cast<EShMessages>(EShMsgSpvRules | EShMsgVulkanRules);
    if (!shader.parse(GetDefaultResources(), 460, false, messages)) {
      return absl::InvalidArgumentError(absl::StrCat(
          "kernel '", name, "' failed to compile:", DescribeGlslErrors(shader.getInfoLog(), glsl)));
    }
    glslang::TProgram program;
    program.addShader(&shader);
    if (!program.link(messages)) {
      return absl::InvalidArgumentError(
          absl::StrCat("kernel '", name, "' failed to link: ", program.getInfoLog()));
    }
    glslang::SpvOptions options;
    options.validate = false;  // ValidateSpirv below reports problems with the kernel's name.
    glslang::GlslangToSpv(*program.getIntermediate(EShLangCompute), spirv, &options);
  }
  if (absl::Status valid = ValidateSpirv(spirv, name); !valid.ok()) return valid;
  return spirv;
}

std::string ShaderCompilerIdentity() {
  // Keep in step with the settings in CompileComputeShader and ValidateSpirv.
  return absl::StrCat("glslang ", GLSLANG_VERSION_MAJOR, ".", GLSLANG_VERSION_MINOR, ".",
                      GLSLANG_VERSION_PATCH, GLSLANG_VERSION_FLAVOR, "; ",
                      spvSoftwareVersionDetailsString(),
                      "; input glsl 460 vulkan 100; client vulkan 1.2; spirv 1.5; "
                      "spv+vulkan rules; validated for vulkan 1.3");
}

absl::Status ValidateSpirv(std::span<const uint32_t> spirv, absl::string_view name) {
  spvtools::SpirvTools tools(SPV_ENV_VULKAN_1_3);
  std::string diagnostics;
  tools.SetMessageConsumer(
      [&](spv_message_level_t, const char*, const spv_position_t& position, const char* message) {
        absl::StrAppend(&diagnostics, "\n  word ", position.index, ": ", message);
      });
  if (spirv.empty() || !tools.Validate(spirv.data(), spirv.size())) {
    return absl::InvalidArgumentError(
        absl::StrCat("kernel '", name, "' is not valid Vulkan 1.3 SPIR-V (", spirv.size(),
                     " words):", diagnostics.empty() ? " empty module" : diagnostics));
  }
  return absl::OkStatus();
}

}  // namespace vkspmd::codegen
