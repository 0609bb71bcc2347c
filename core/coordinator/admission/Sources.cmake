# core/coordinator/admission: challenges, signed admission claims and stage assignment.
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/AdmissionClaims.cpp ${CMAKE_CURRENT_LIST_DIR}/AdmissionClaims.h
    ${CMAKE_CURRENT_LIST_DIR}/AdmissionOutcome.h
    ${CMAKE_CURRENT_LIST_DIR}/AdmissionService.cpp ${CMAKE_CURRENT_LIST_DIR}/AdmissionService.h
    ${CMAKE_CURRENT_LIST_DIR}/AssignmentLog.cpp ${CMAKE_CURRENT_LIST_DIR}/AssignmentLog.h
    ${CMAKE_CURRENT_LIST_DIR}/AssignmentPolicy.cpp ${CMAKE_CURRENT_LIST_DIR}/AssignmentPolicy.h
    ${CMAKE_CURRENT_LIST_DIR}/ClientVersion.cpp ${CMAKE_CURRENT_LIST_DIR}/ClientVersion.h)
