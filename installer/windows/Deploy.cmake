# SPDX-License-Identifier: Apache-2.0
# Runs at install time on Windows (configured, untested here): makes the installed programs
# self-contained, so that the NSIS installer needs nothing else on the volunteer's machine.
# Expects TESSERA_WINDEPLOYQT, TESSERA_TORCH_LIBDIR, TESSERA_OPENSSL_ROOT and
# TESSERA_INSTALL_BINDIR from installer/CMakeLists.txt.
set(bindir "${CMAKE_INSTALL_PREFIX}/${TESSERA_INSTALL_BINDIR}")

# Qt: DLLs, the platform, style, TLS and SQL driver plugins, and the compiler runtime.
if(NOT TESSERA_WINDEPLOYQT)
    message(FATAL_ERROR "windeployqt was not found: the installer would lack Qt")
endif()
foreach(exe tessera tessera-node tessera-coordinator)
    if(EXISTS "${bindir}/${exe}.exe")
        execute_process(
            COMMAND "${TESSERA_WINDEPLOYQT}" --release --compiler-runtime --no-translations
                    --no-opengl-sw --dir "${bindir}" "${bindir}/${exe}.exe"
            RESULT_VARIABLE rc)
        if(NOT rc EQUAL 0)
            message(FATAL_ERROR "windeployqt failed on ${exe}.exe (${rc})")
        endif()
    endif()
endforeach()

# LibTorch (torch_cpu, c10, their OpenMP and oneDNN/MKL DLLs; CUDA ones when it is a CUDA build).
file(GLOB torch_dlls "${TESSERA_TORCH_LIBDIR}/*.dll")
if(NOT torch_dlls)
    message(FATAL_ERROR "no LibTorch DLLs in ${TESSERA_TORCH_LIBDIR}")
endif()
file(INSTALL ${torch_dlls} DESTINATION "${bindir}")

# OpenSSL 3 (identities, signatures, and Qt's TLS backend).
file(GLOB openssl_dlls "${TESSERA_OPENSSL_ROOT}/bin/libcrypto-3*.dll" "${TESSERA_OPENSSL_ROOT}/bin/libssl-3*.dll")
if(openssl_dlls)
    file(INSTALL ${openssl_dlls} DESTINATION "${bindir}")
else()
    message(WARNING "OpenSSL DLLs not found under ${TESSERA_OPENSSL_ROOT}/bin: set OPENSSL_ROOT_DIR")
endif()
