# SPDX-License-Identifier: Apache-2.0
# tessera_units(TARGET unit...): adds each unit's header and, where there is one, its .cpp to TARGET
# (one class per file pair: "node/engine/EngineWorker" adds EngineWorker.h and EngineWorker.cpp).
# A unit with neither file is a typo in a list, and stops the configure step.
function(tessera_units target)
    foreach(unit IN LISTS ARGN)
        set(found FALSE)
        foreach(ext .h .cpp)
            if(EXISTS "${CMAKE_CURRENT_SOURCE_DIR}/${unit}${ext}")
                target_sources(${target} PRIVATE "${unit}${ext}")
                set(found TRUE)
            endif()
        endforeach()
        if(NOT found)
            message(FATAL_ERROR "tessera_units(${target}): ${CMAKE_CURRENT_SOURCE_DIR}/${unit} has no .h or .cpp")
        endif()
    endforeach()
endfunction()
