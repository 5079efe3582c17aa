// Test support for the Tensor API: a global environment that checks the lazy runtime's devices
// produced no validation message (teardown included), and the CPU reference of a tensor: its
// traced graph, unpartitioned, run by the reference evaluator.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <vector>

#include "src/ir/literal.h"
#include "vkspmd/vkspmd.h"

namespace vkspmd::testing {

// The tensor's value as the reference evaluator computes its graph (before any sync: call this
// first, then read the tensor from the devices).
ir::Literal ReferenceValue(const Tensor& tensor);
// The same on the mesh the tensor is computed on, each partition an emulated device (what a
// graph with manual regions and explicit collectives needs); device 0's value.
ir::Literal MeshReferenceValue(const Tensor& tensor);

// Every element within `relative` of the reference (relative to max(1, |reference|)); exact for
// integers and booleans. "" when equal, else the first difference.
std::string CompareWithReference(const HostTensor& actual, const ir::Literal& reference,
                                 double relative = 1e-5);

// Every element of `actual` within `absolute` + `relative` * |expected| of `expected` (floats;
// a NaN or an infinity only where `expected` has the same); exact for integers and booleans.
// Shapes and dtypes must be equal. "" when equal, else the first difference.
std::string CompareWithExpected(const HostTensor& actual, const HostTensor& expected,
                                double relative, double absolute);

// The message of the vkspmd::Error that `call` throws, or "no error".
std::string ThrownMessage(const std::function<void()>& call);

// The validation message count of the lazy runtime's devices after closing them.
int64_t CloseDevicesAndCountValidationMessages();

}  // namespace vkspmd::testing
