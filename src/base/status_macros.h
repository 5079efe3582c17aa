// Status propagation helpers for absl::Status / absl::StatusOr code (this abseil has none public).
// Kept to the two macros every layer needs.
#pragma once

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define VKSPMD_STATUS_CONCAT_INNER(a, b) a##b
#define VKSPMD_STATUS_CONCAT(a, b) VKSPMD_STATUS_CONCAT_INNER(a, b)

#define VKSPMD_RETURN_IF_ERROR(expression)           \
  do {                                               \
    absl::Status vkspmd_status_ = (expression);      \
    if (!vkspmd_status_.ok()) return vkspmd_status_; \
  } while (false)

#define VKSPMD_ASSIGN_OR_RETURN(lhs, expression) \
  VKSPMD_ASSIGN_OR_RETURN_IMPL(VKSPMD_STATUS_CONCAT(vkspmd_statusor_, __LINE__), lhs, expression)

#define VKSPMD_ASSIGN_OR_RETURN_IMPL(statusor, lhs, expression) \
  auto statusor = (expression);                                 \
  if (!statusor.ok()) return statusor.status();                 \
  lhs = std::move(statusor).value()
