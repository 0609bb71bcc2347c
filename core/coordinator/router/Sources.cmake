# core/coordinator/router: the data plane — which node of each stage runs the next task, the
# microbatches' trips through the pipeline, steps, averaging, checkpoints and credits.
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/Averager.cpp ${CMAKE_CURRENT_LIST_DIR}/Averager.h
    ${CMAKE_CURRENT_LIST_DIR}/Microbatch.h
    ${CMAKE_CURRENT_LIST_DIR}/Router.cpp ${CMAKE_CURRENT_LIST_DIR}/Router.h
    ${CMAKE_CURRENT_LIST_DIR}/StageScheduler.cpp ${CMAKE_CURRENT_LIST_DIR}/StageScheduler.h
    ${CMAKE_CURRENT_LIST_DIR}/Trainer.cpp ${CMAKE_CURRENT_LIST_DIR}/Trainer.h)
