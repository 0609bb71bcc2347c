# core/coordinator: the coordinator's state in SQL (SQLite or PostgreSQL through Qt SQL).
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/CreditLedger.cpp ${CMAKE_CURRENT_LIST_DIR}/CreditLedger.h
    ${CMAKE_CURRENT_LIST_DIR}/Database.cpp ${CMAKE_CURRENT_LIST_DIR}/Database.h
    ${CMAKE_CURRENT_LIST_DIR}/Migrations.cpp ${CMAKE_CURRENT_LIST_DIR}/Migrations.h
    ${CMAKE_CURRENT_LIST_DIR}/NodeRegistry.cpp ${CMAKE_CURRENT_LIST_DIR}/NodeRegistry.h
    ${CMAKE_CURRENT_LIST_DIR}/NonceStore.cpp ${CMAKE_CURRENT_LIST_DIR}/NonceStore.h
    ${CMAKE_CURRENT_LIST_DIR}/SessionStore.cpp ${CMAKE_CURRENT_LIST_DIR}/SessionStore.h
    ${CMAKE_CURRENT_LIST_DIR}/Sql.cpp ${CMAKE_CURRENT_LIST_DIR}/Sql.h
    ${CMAKE_CURRENT_LIST_DIR}/StageVersionStore.cpp ${CMAKE_CURRENT_LIST_DIR}/StageVersionStore.h)
