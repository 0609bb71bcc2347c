# SPDX-License-Identifier: Apache-2.0
# Find nvcc (the toolkit lives in /usr/local/cuda without being on PATH) and enable CUDA.
# Sets TESSERA_HAVE_CUDA. Without nvcc the project builds exactly the same, minus the
# CUDA backend module.
set(TESSERA_HAVE_CUDA OFF)
if(TESSERA_CUDA)
    if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS "/usr/local/cuda/bin/nvcc")
        set(CMAKE_CUDA_COMPILER "/usr/local/cuda/bin/nvcc")
    endif()
    include(CheckLanguage)
    check_language(CUDA)
    if(CMAKE_CUDA_COMPILER)
        if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
            # Consumer cards from Turing (RTX 20) to Blackwell (RTX 50), plus A100 and H100/H200.
            # CUDA 13 no longer targets anything older than sm_75.
            set(CMAKE_CUDA_ARCHITECTURES "75-real;80-real;86-real;89-real;90-real;120")
        endif()
        enable_language(CUDA)
        find_package(CUDAToolkit REQUIRED)
        set(TESSERA_HAVE_CUDA ON)
        message(STATUS "CUDA ${CUDAToolkit_VERSION} at ${CUDAToolkit_BIN_DIR}, archs ${CMAKE_CUDA_ARCHITECTURES}")
    else()
        message(STATUS "nvcc not found: the CUDA backend is not built")
    endif()
endif()
