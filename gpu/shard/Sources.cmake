# gpu/shard: stage shards on disk and on the wire (safetensors, manifests, SHA-256), torch-free
# except StageShard and InitialShards' .cpp, which move a StageModel's weights into them.
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/InitialShards.cpp ${CMAKE_CURRENT_LIST_DIR}/InitialShards.h
    ${CMAKE_CURRENT_LIST_DIR}/Sha256.cpp ${CMAKE_CURRENT_LIST_DIR}/Sha256.h
    ${CMAKE_CURRENT_LIST_DIR}/Safetensors.cpp ${CMAKE_CURRENT_LIST_DIR}/Safetensors.h
    ${CMAKE_CURRENT_LIST_DIR}/SafetensorsWriter.cpp ${CMAKE_CURRENT_LIST_DIR}/SafetensorsWriter.h
    ${CMAKE_CURRENT_LIST_DIR}/ShardManifest.cpp ${CMAKE_CURRENT_LIST_DIR}/ShardManifest.h
    ${CMAKE_CURRENT_LIST_DIR}/StageShard.cpp ${CMAKE_CURRENT_LIST_DIR}/StageShard.h)
