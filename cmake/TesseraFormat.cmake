# SPDX-License-Identifier: Apache-2.0
# `cmake --build build --target format` rewrites every C++/CUDA source with .clang-format;
# `format-check` fails when a file is not formatted.
find_program(TESSERA_CLANG_FORMAT NAMES clang-format clang-format-14)
if(TESSERA_CLANG_FORMAT)
    file(GLOB_RECURSE _tessera_sources CONFIGURE_DEPENDS
        ${PROJECT_SOURCE_DIR}/app/*.cpp ${PROJECT_SOURCE_DIR}/app/*.h
        ${PROJECT_SOURCE_DIR}/core/*.cpp ${PROJECT_SOURCE_DIR}/core/*.h
        ${PROJECT_SOURCE_DIR}/gpu/*.cpp ${PROJECT_SOURCE_DIR}/gpu/*.h ${PROJECT_SOURCE_DIR}/gpu/*.cu
        ${PROJECT_SOURCE_DIR}/ui/*.cpp ${PROJECT_SOURCE_DIR}/ui/*.h
        ${PROJECT_SOURCE_DIR}/tests/*.cpp ${PROJECT_SOURCE_DIR}/tests/*.h ${PROJECT_SOURCE_DIR}/tests/*.c)
    add_custom_target(format
        COMMAND ${TESSERA_CLANG_FORMAT} -i --style=file ${_tessera_sources}
        WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
        COMMENT "clang-format: rewriting sources")
    add_custom_target(format-check
        COMMAND ${TESSERA_CLANG_FORMAT} --dry-run --Werror --style=file ${_tessera_sources}
        WORKING_DIRECTORY ${PROJECT_SOURCE_DIR}
        COMMENT "clang-format: checking sources")
endif()
