// The library's version, as the build that produced libvkspmd numbered it.
#pragma once

namespace vkspmd {

// "MAJOR.MINOR.PATCH" (the CMake project version).
const char* version();

}  // namespace vkspmd
