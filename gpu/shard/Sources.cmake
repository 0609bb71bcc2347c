# gpu/shard: stage shards on disk and on the wire (safetensors, manifests, SHA-256), torch-free
# except StageShard, which moves a StageModel's weights in and out of them.
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/Sha256.cpp ${CMAKE_CURRENT_LIST_DIR}/Sha256.h
    ${CMAKE_CURRENT_LIST_DIR}/Safetensors.cpp ${CMAKE_CURRENT_LIST_DIR}/Safetensors.h
    ${CMAKE_CURRENT_LIST_DIR}/SafetensorsWriter.cpp ${CMAKE_CURRENT_LIST_DIR}/SafetensorsWriter.h
    ${CMAKE_CURRENT_LIST_DIR}/ShardManifest.cpp ${CMAKE_CURRENT_LIST_DIR}/ShardManifest.h
    ${CMAKE_CURRENT_LIST_DIR}/StageShard.cpp ${CMAKE_CURRENT_LIST_DIR}/StageShard.h)
