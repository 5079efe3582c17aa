# Compiler warnings for every vkspmd target; -Werror when VKSPMD_WERROR is on (CI).
add_library(vkspmd_warnings INTERFACE)
target_compile_options(vkspmd_warnings INTERFACE -Wall -Wextra -Wpedantic -Wshadow
                                                 -Wno-missing-field-initializers)
if(VKSPMD_WERROR)
  target_compile_options(vkspmd_warnings INTERFACE -Werror)
endif()
