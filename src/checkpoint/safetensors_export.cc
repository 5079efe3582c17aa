// Streaming the step's tensors, one whole tensor at a time, into the safetensors writer.
#include "src/checkpoint/safetensors_export.h"

#include "absl/strings/str_cat.h"
#include "src/base/status_macros.h"
#include "src/checkpoint/restore.h"
#include "src/io/safetensors.h"

namespace vkspmd::checkpoint {

absl::Status ExportSafetensors(const StepReader& reader, const std::string& output_path) {
  const io::Manifest& manifest = reader.manifest();
  std::vector<io::SafetensorsEntry> entries;
  for (const io::ManifestTensor& tensor : manifest.tensors) {
    entries.push_back({tensor.name, tensor.dtype, tensor.shape});
  }
  std::map<std::string, std::string> metadata = manifest.metadata;
  metadata["vkspmd.step"] = absl::StrCat(manifest.step);
  metadata["vkspmd.library_version"] = manifest.library_version;
  VKSPMD_ASSIGN_OR_RETURN(io::SafetensorsWriter writer,
                          io::SafetensorsWriter::Create(output_path, std::move(entries), metadata));
  for (const io::ManifestTensor& tensor : manifest.tensors) {
    VKSPMD_ASSIGN_OR_RETURN(ir::Literal whole, ReadWholeTensor(reader, tensor));
    VKSPMD_RETURN_IF_ERROR(writer.Append(whole.bytes()));
  }
  return writer.Finish();
}

}  // namespace vkspmd::checkpoint
