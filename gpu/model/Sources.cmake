# gpu/model: the Llama-style decoder cut into pipeline stages (internal headers include torch).
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/Attention.cpp ${CMAKE_CURRENT_LIST_DIR}/Attention.h
    ${CMAKE_CURRENT_LIST_DIR}/BlockContext.h
    ${CMAKE_CURRENT_LIST_DIR}/DecoderBlock.cpp ${CMAKE_CURRENT_LIST_DIR}/DecoderBlock.h
    ${CMAKE_CURRENT_LIST_DIR}/MemoryEstimate.cpp ${CMAKE_CURRENT_LIST_DIR}/MemoryEstimate.h
    ${CMAKE_CURRENT_LIST_DIR}/ModelConfig.cpp ${CMAKE_CURRENT_LIST_DIR}/ModelConfig.h
    ${CMAKE_CURRENT_LIST_DIR}/RmsNorm.cpp ${CMAKE_CURRENT_LIST_DIR}/RmsNorm.h
    ${CMAKE_CURRENT_LIST_DIR}/RotaryEmbedding.cpp ${CMAKE_CURRENT_LIST_DIR}/RotaryEmbedding.h
    ${CMAKE_CURRENT_LIST_DIR}/SeededInit.cpp ${CMAKE_CURRENT_LIST_DIR}/SeededInit.h
    ${CMAKE_CURRENT_LIST_DIR}/StageModel.cpp ${CMAKE_CURRENT_LIST_DIR}/StageModel.h
    ${CMAKE_CURRENT_LIST_DIR}/Subspace.cpp ${CMAKE_CURRENT_LIST_DIR}/Subspace.h
    ${CMAKE_CURRENT_LIST_DIR}/SwiGlu.cpp ${CMAKE_CURRENT_LIST_DIR}/SwiGlu.h)
