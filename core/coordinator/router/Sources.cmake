# core/coordinator/router: which node of each stage runs the next microbatch.
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/StageScheduler.cpp ${CMAKE_CURRENT_LIST_DIR}/StageScheduler.h)
