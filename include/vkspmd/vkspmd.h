// The whole public API of vkspmd.
#pragma once

#include "vkspmd/autograd.h"
#include "vkspmd/devices.h"
#include "vkspmd/dtype.h"
#include "vkspmd/error.h"
#include "vkspmd/host_tensor.h"
#include "vkspmd/lazy.h"
#include "vkspmd/mesh.h"
#include "vkspmd/nn.h"
#include "vkspmd/ops.h"
#include "vkspmd/optim.h"
#include "vkspmd/parallel.h"
#include "vkspmd/scalar.h"
#include "vkspmd/sharded_tensor.h"
#include "vkspmd/sharding.h"
#include "vkspmd/tensor.h"
#include "vkspmd/version.h"
