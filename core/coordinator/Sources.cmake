# core/coordinator: the coordinator process (options, run, assembly) and its state in SQL
# (SQLite or PostgreSQL through Qt SQL).
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/Coordinator.cpp ${CMAKE_CURRENT_LIST_DIR}/Coordinator.h
    ${CMAKE_CURRENT_LIST_DIR}/CoordinatorCommandLine.cpp ${CMAKE_CURRENT_LIST_DIR}/CoordinatorCommandLine.h
    ${CMAKE_CURRENT_LIST_DIR}/CoordinatorOptions.h
    ${CMAKE_CURRENT_LIST_DIR}/CoordinatorRun.cpp ${CMAKE_CURRENT_LIST_DIR}/CoordinatorRun.h
    ${CMAKE_CURRENT_LIST_DIR}/CreditLedger.cpp ${CMAKE_CURRENT_LIST_DIR}/CreditLedger.h
    ${CMAKE_CURRENT_LIST_DIR}/Database.cpp ${CMAKE_CURRENT_LIST_DIR}/Database.h
    ${CMAKE_CURRENT_LIST_DIR}/DatasetSpec.cpp ${CMAKE_CURRENT_LIST_DIR}/DatasetSpec.h
    ${CMAKE_CURRENT_LIST_DIR}/Migrations.cpp ${CMAKE_CURRENT_LIST_DIR}/Migrations.h
    ${CMAKE_CURRENT_LIST_DIR}/NodeRegistry.cpp ${CMAKE_CURRENT_LIST_DIR}/NodeRegistry.h
    ${CMAKE_CURRENT_LIST_DIR}/NonceStore.cpp ${CMAKE_CURRENT_LIST_DIR}/NonceStore.h
    ${CMAKE_CURRENT_LIST_DIR}/SessionStore.cpp ${CMAKE_CURRENT_LIST_DIR}/SessionStore.h
    ${CMAKE_CURRENT_LIST_DIR}/ShutdownSignals.cpp ${CMAKE_CURRENT_LIST_DIR}/ShutdownSignals.h
    ${CMAKE_CURRENT_LIST_DIR}/Sql.cpp ${CMAKE_CURRENT_LIST_DIR}/Sql.h
    ${CMAKE_CURRENT_LIST_DIR}/StageCheckpoints.cpp ${CMAKE_CURRENT_LIST_DIR}/StageCheckpoints.h
    ${CMAKE_CURRENT_LIST_DIR}/StageVersionStore.cpp ${CMAKE_CURRENT_LIST_DIR}/StageVersionStore.h
    ${CMAKE_CURRENT_LIST_DIR}/TrainingStore.cpp ${CMAKE_CURRENT_LIST_DIR}/TrainingStore.h)
