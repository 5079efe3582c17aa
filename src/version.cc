// libvkspmd's own translation unit (the public API's implementation comes from the layer
// archives linked whole): the version.
#include "vkspmd/version.h"

namespace vkspmd {

const char* version() { return VKSPMD_LIBRARY_VERSION; }

}  // namespace vkspmd
