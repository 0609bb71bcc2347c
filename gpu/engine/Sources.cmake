# gpu/engine/: the torch-free facade the node's engine drives (codec bytes in, codec bytes out).
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/StageEngine.cpp ${CMAKE_CURRENT_LIST_DIR}/StageEngine.h
    ${CMAKE_CURRENT_LIST_DIR}/TokenFrame.cpp ${CMAKE_CURRENT_LIST_DIR}/TokenFrame.h)
