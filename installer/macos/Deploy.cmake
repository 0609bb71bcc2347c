# SPDX-License-Identifier: Apache-2.0
# Runs at install time on macOS (configured, untested here): turns the installed programs into
# one self-contained Tessera.app for the DragNDrop disk image. The app, tessera-node and
# tessera-coordinator sit together in Contents/MacOS (the app starts the node from next to
# itself); macdeployqt copies Qt's frameworks and plugins and LibTorch's dylibs into the bundle
# and rewrites their load paths. Expects the TESSERA_* variables set by installer/CMakeLists.txt.
set(prefix "$ENV{DESTDIR}${CMAKE_INSTALL_PREFIX}")
set(app "${prefix}/Tessera.app")
set(bindir "${prefix}/${TESSERA_INSTALL_BINDIR}")

file(MAKE_DIRECTORY "${app}/Contents/MacOS" "${app}/Contents/Resources")
set(executables "")
foreach(name tessera tessera-node tessera-coordinator tessera-sim)
    if(EXISTS "${bindir}/${name}")
        file(RENAME "${bindir}/${name}" "${app}/Contents/MacOS/${name}")
        if(NOT name STREQUAL "tessera")
            list(APPEND executables "-executable=${app}/Contents/MacOS/${name}")
        endif()
    endif()
endforeach()
# Only what this project installed goes; an emptied bin/ is removed (the disk image shows the
# install root, where Tessera.app should be alone).
file(GLOB left "${bindir}/*")
if(NOT left)
    file(REMOVE_RECURSE "${bindir}")
endif()
configure_file("${TESSERA_MACOS_DIR}/Info.plist.in" "${app}/Contents/Info.plist" @ONLY)
if(TESSERA_ICNS AND EXISTS "${TESSERA_ICNS}")
    file(COPY "${TESSERA_ICNS}" DESTINATION "${app}/Contents/Resources")
endif()

if(NOT TESSERA_MACDEPLOYQT)
    message(FATAL_ERROR "macdeployqt was not found: the disk image would lack Qt")
endif()
execute_process(
    COMMAND "${TESSERA_MACDEPLOYQT}" "${app}" ${executables} "-libpath=${TESSERA_TORCH_LIBDIR}" -always-overwrite
    RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
    message(FATAL_ERROR "macdeployqt failed (${rc})")
endif()
