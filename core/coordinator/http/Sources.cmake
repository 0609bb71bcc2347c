# core/coordinator/http: the coordinator's own HTTP/1.1 server (limits, ranges, upgrades).
target_sources(tessera_core PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/ByteRange.cpp ${CMAKE_CURRENT_LIST_DIR}/ByteRange.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpConnection.cpp ${CMAKE_CURRENT_LIST_DIR}/HttpConnection.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpHeaders.cpp ${CMAKE_CURRENT_LIST_DIR}/HttpHeaders.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpRequest.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpRequestParser.cpp ${CMAKE_CURRENT_LIST_DIR}/HttpRequestParser.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpResponse.cpp ${CMAKE_CURRENT_LIST_DIR}/HttpResponse.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpRouter.cpp ${CMAKE_CURRENT_LIST_DIR}/HttpRouter.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpServer.cpp ${CMAKE_CURRENT_LIST_DIR}/HttpServer.h
    ${CMAKE_CURRENT_LIST_DIR}/HttpServerConfig.h)
