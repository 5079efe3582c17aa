# `cmake --install`: headers, libvkspmd and a vkspmdConfig.cmake so other projects can
# find_package(vkspmd) and link vkspmd::vkspmd.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

install(TARGETS vkspmd EXPORT vkspmdTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/vkspmd DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT vkspmdTargets NAMESPACE vkspmd:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vkspmd)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/vkspmdConfig.cmake.in
                              ${CMAKE_CURRENT_BINARY_DIR}/vkspmdConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vkspmd)
write_basic_package_version_file(${CMAKE_CURRENT_BINARY_DIR}/vkspmdConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_CURRENT_BINARY_DIR}/vkspmdConfig.cmake
              ${CMAKE_CURRENT_BINARY_DIR}/vkspmdConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/vkspmd)
