# SPDX-License-Identifier: Apache-2.0
# One INTERFACE target carries the language standard, warnings and defines for every
# target of the project (qBittorrent's pattern): link it PRIVATE everywhere.
add_library(tessera_build_options INTERFACE)
target_compile_features(tessera_build_options INTERFACE cxx_std_20)
set(CMAKE_CXX_EXTENSIONS OFF)

target_compile_options(tessera_build_options INTERFACE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
        -Wcast-align -Woverloaded-virtual -Wimplicit-fallthrough>)

# LibTorch decides the libstdc++ ABI (a pip LibTorch may use the old one). gpu/ passes
# std::string across its API, so every target of the build must agree with torch.
string(REGEX MATCH "_GLIBCXX_USE_CXX11_ABI=([01])" _abi "${TORCH_CXX_FLAGS}")
if(_abi)
    target_compile_definitions(tessera_build_options INTERFACE "_GLIBCXX_USE_CXX11_ABI=${CMAKE_MATCH_1}")
endif()

# PyTorch's own LibTorch (2.5 and later: pip wheels and the official downloads) exports the copy of
# libstdc++'s std::filesystem it links statically, built by an older GCC (pytorch/pytorch#133437). A
# program's calls into std::filesystem were bound to that copy on a GPU machine (torch 2.11, GCC 13)
# and crashed (a null call inside remove_all, issue 19's device check). Where the LibTorch exports such
# symbols, programs link libstdc++ statically: their own calls are then resolved inside the program,
# whatever the libraries export. Debian's LibTorch exports none, and nothing changes there.
if(UNIX AND NOT APPLE AND NOT TESSERA_SANITIZE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU" AND TORCH_INSTALL_PREFIX)
    find_library(TESSERA_TORCH_CPU_LIBRARY torch_cpu PATHS "${TORCH_INSTALL_PREFIX}/lib" NO_DEFAULT_PATH)
    find_program(TESSERA_NM nm)
    if(TESSERA_TORCH_CPU_LIBRARY AND TESSERA_NM)
        execute_process(COMMAND ${TESSERA_NM} -D --defined-only ${TESSERA_TORCH_CPU_LIBRARY}
                        COMMAND grep -c "_ZNSt10filesystem"
                        OUTPUT_VARIABLE _tessera_exported OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
        if(_tessera_exported GREATER 0)
            target_link_options(tessera_build_options INTERFACE -static-libstdc++)
            message(STATUS "LibTorch exports ${_tessera_exported} std::filesystem symbols (pytorch#133437): "
                           "programs link libstdc++ statically")
        endif()
    endif()
endif()

# Torch defines `slots`; Qt code spells Q_SLOTS / Q_SIGNALS / Q_EMIT instead.
target_compile_definitions(tessera_build_options INTERFACE
    QT_NO_KEYWORDS
    QT_NO_CAST_FROM_ASCII
    QT_NO_CAST_TO_ASCII
    QT_NO_URL_CAST_FROM_STRING
    QT_NO_NARROWING_CONVERSIONS_IN_CONNECT
    QT_USE_QSTRINGBUILDER
    QT_DISABLE_DEPRECATED_BEFORE=0x060400
    TESSERA_VERSION="${PROJECT_VERSION}")
