// The collective algorithms on host memory, written once against a Transport: request checking,
// which member computes which share, the bit-identical reduction order, chunking, and staging of
// in-place results. Every transport's communicators are these; a transport supplies only the
// meeting and the byte moves.
#pragma once

#include <memory>

#include "src/collectives/communicator.h"
#include "src/collectives/transport.h"

namespace vkspmd::collectives {

// The communicator of `rank` over `transport` (shared: it lives as long as any rank uses it).
std::unique_ptr<Communicator> MakeHostCommunicator(std::shared_ptr<Transport> transport, int rank);

}  // namespace vkspmd::collectives
