// initialize_cache over the compile cache of src/exec.
#include "src/exec/compile_cache.h"
#include "vkspmd/cache.h"

namespace vkspmd {

void initialize_cache(const std::string& path, bool readonly) {
  exec::CompileCacheOptions options;
  // The size cap and the rest follow the environment; only where and how are the caller's.
  if (absl::StatusOr<exec::CompileCacheOptions> from_environment =
          exec::CompileCacheOptions::FromEnvironment();
      from_environment.ok()) {
    options = *from_environment;
  }
  options.directory = path;
  options.readonly = readonly;
  exec::ConfigureCompileCache(options);
}

std::string cache_directory() { return exec::CompileCacheDirectory(); }

}  // namespace vkspmd
