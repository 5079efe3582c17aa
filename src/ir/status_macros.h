// Moved to src/base/status_macros.h; this forwarding header goes once every includer is updated.
#pragma once

#include "src/base/status_macros.h"
