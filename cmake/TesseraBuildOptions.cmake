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
