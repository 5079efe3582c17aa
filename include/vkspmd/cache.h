// The persistent compilation cache (PyTorch/XLA's initialize_cache): generated kernels and the
// devices' pipeline caches kept on disk, so a restarted program skips what it compiled before.
#pragma once

#include <string>

namespace vkspmd {

// Uses the directory `path` as the compile cache from now on, creating it (mode 0700) when
// missing; `readonly` reads entries but never writes or evicts. An empty path turns the cache
// off. Without a call, VKSPMD_CACHE_DIR decides (default $XDG_CACHE_HOME/vkspmd, else
// ~/.cache/vkspmd). A directory owned by another user or writable by others is refused with a
// one-line warning and the program runs uncached. Call it before the first computation: a device
// that has compiled keeps the pipeline cache it started with.
void initialize_cache(const std::string& path, bool readonly = false);

// The directory in use, or empty when the program runs uncached.
std::string cache_directory();

}  // namespace vkspmd
