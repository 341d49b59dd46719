# What `cmake --install` puts under the prefix (docs/linking.md, "Installing"): the tools, the
# CMake package that gives needle_add_model(), and a pkg-config file for other builds.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

set(installed_programs needlec needle-opt needle-run needle-synth tokenizer-encode)
# Debian's LLVM keeps libMLIR.so in /usr/lib/llvm-19/lib, which the loader does not search: the
# installed programs keep the paths of the libraries they link, as the build's do.
set_target_properties(${installed_programs} PROPERTIES INSTALL_RPATH_USE_LINK_PATH TRUE)
install(TARGETS needlec needle-opt needle-run needle-synth RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# needle-train runs needle-synth beside it and its own modules and tokenizer-encode from
# libexec/needlec (tools/needle-train/needle-train, tool()).
install(PROGRAMS tools/needle-train/needle-train DESTINATION ${CMAKE_INSTALL_BINDIR})
install(FILES tools/needle-train/needle_torch.py tools/needle-train/tasks.py
        DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/needlec)
install(TARGETS tokenizer-encode RUNTIME DESTINATION ${CMAKE_INSTALL_LIBEXECDIR}/needlec)

set(package_dir ${CMAKE_INSTALL_LIBDIR}/cmake/needlec)
configure_package_config_file(cmake/needlecConfig.cmake.in ${CMAKE_BINARY_DIR}/package/needlecConfig.cmake
                              INSTALL_DESTINATION ${package_dir} PATH_VARS CMAKE_INSTALL_BINDIR)
# 0.x: a minor version may change the C interface (docs/c-interface.md).
write_basic_package_version_file(${CMAKE_BINARY_DIR}/package/needlecConfigVersion.cmake
                                 COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/package/needlecConfig.cmake ${CMAKE_BINARY_DIR}/package/needlecConfigVersion.cmake
              cmake/NeedleModel.cmake DESTINATION ${package_dir})

# The .pc file finds the prefix from its own place, so `cmake --install --prefix` anywhere works.
file(RELATIVE_PATH pc_to_prefix /prefix/${CMAKE_INSTALL_LIBDIR}/pkgconfig /prefix)
string(REGEX REPLACE "/$" "" pc_to_prefix ${pc_to_prefix})
configure_file(cmake/needlec.pc.in ${CMAKE_BINARY_DIR}/package/needlec.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/package/needlec.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
