# SPDX-License-Identifier: Apache-2.0
# Use ccache for C, C++ and CUDA when it is installed. Torch headers are slow to compile;
# a warm cache turns a rebuild from minutes into seconds.
find_program(TESSERA_CCACHE ccache)
if(TESSERA_CCACHE AND NOT CMAKE_CXX_COMPILER_LAUNCHER)
    # CCACHE_BASEDIR: paths inside the tree are hashed relative to it, so a fresh clone in another
    # folder (CI) still hits the cache.
    set(_launcher "${CMAKE_COMMAND};-E;env;CCACHE_BASEDIR=${PROJECT_SOURCE_DIR};CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime;${TESSERA_CCACHE}")
    set(CMAKE_C_COMPILER_LAUNCHER "${_launcher}")
    set(CMAKE_CXX_COMPILER_LAUNCHER "${_launcher}")
    set(CMAKE_CUDA_COMPILER_LAUNCHER "${_launcher}")
    message(STATUS "ccache: ${TESSERA_CCACHE}")
endif()
