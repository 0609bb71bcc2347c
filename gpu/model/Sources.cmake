# gpu/model: the Llama-style decoder cut into pipeline stages (internal headers include torch).
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/ModelConfig.cpp ${CMAKE_CURRENT_LIST_DIR}/ModelConfig.h
    ${CMAKE_CURRENT_LIST_DIR}/Subspace.cpp ${CMAKE_CURRENT_LIST_DIR}/Subspace.h)
