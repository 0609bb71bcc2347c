# core/coordinator/api: the coordinator's /v1 routes over its services and stores.
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/AdmissionApi.cpp ${CMAKE_CURRENT_LIST_DIR}/AdmissionApi.h
    ${CMAKE_CURRENT_LIST_DIR}/CreditsApi.cpp ${CMAKE_CURRENT_LIST_DIR}/CreditsApi.h
    ${CMAKE_CURRENT_LIST_DIR}/JsonBody.cpp ${CMAKE_CURRENT_LIST_DIR}/JsonBody.h
    ${CMAKE_CURRENT_LIST_DIR}/ManifestSignature.cpp ${CMAKE_CURRENT_LIST_DIR}/ManifestSignature.h
    ${CMAKE_CURRENT_LIST_DIR}/Metrics.h
    ${CMAKE_CURRENT_LIST_DIR}/SessionApi.cpp ${CMAKE_CURRENT_LIST_DIR}/SessionApi.h
    ${CMAKE_CURRENT_LIST_DIR}/ShardApi.cpp ${CMAKE_CURRENT_LIST_DIR}/ShardApi.h
    ${CMAKE_CURRENT_LIST_DIR}/StatusApi.cpp ${CMAKE_CURRENT_LIST_DIR}/StatusApi.h)
