# gpu/codec: what crosses a stage boundary, as bytes (internal headers include torch).
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/Codec.cpp ${CMAKE_CURRENT_LIST_DIR}/Codec.h
    ${CMAKE_CURRENT_LIST_DIR}/FrameHeader.cpp ${CMAKE_CURRENT_LIST_DIR}/FrameHeader.h
    ${CMAKE_CURRENT_LIST_DIR}/WirePacking.cpp ${CMAKE_CURRENT_LIST_DIR}/WirePacking.h
    ${CMAKE_CURRENT_LIST_DIR}/NoneCodec.cpp ${CMAKE_CURRENT_LIST_DIR}/NoneCodec.h
    ${CMAKE_CURRENT_LIST_DIR}/Int8Codec.cpp ${CMAKE_CURRENT_LIST_DIR}/Int8Codec.h
    ${CMAKE_CURRENT_LIST_DIR}/SubspaceCodec.cpp ${CMAKE_CURRENT_LIST_DIR}/SubspaceCodec.h)
