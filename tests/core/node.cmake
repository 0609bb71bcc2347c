# core/node/ tests: units on real files and sockets; processes against the real coordinator.

# The control socket: ControlServer and ControlClient on real local sockets and token files.
tessera_core_test(test_control_socket)

# The engine thread: ComputeThrottle on synthetic times; EngineWorker on the real tiny model (CPU).
tessera_core_test(test_compute_throttle)
tessera_core_test(test_engine_worker)
# TaskRunner: the data plane's binary messages into engine tasks and back, on the real tiny model.
tessera_core_test(test_task_runner)

# The node's credit ledger: a strict reader of the coordinator's credits page; LocalLedger on real
# SQLite files, and a writer process the test SIGKILLs at random moments.
tessera_core_test(test_credits_page)
tessera_core_test(test_local_ledger)
add_executable(ledger_writer ledger_writer.cpp ReceiptChain.h)
target_link_libraries(ledger_writer PRIVATE tessera_build_options tessera_core)
target_include_directories(ledger_writer PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
add_dependencies(test_local_ledger ledger_writer)
target_compile_definitions(test_local_ledger PRIVATE TESSERA_LEDGER_WRITER_PATH="$<TARGET_FILE:ledger_writer>")

# A transfer's rate and bandwidth cap, on synthetic times; the OpenSSL SHA-256 shards are hashed with.
tessera_core_test(test_transfer_rate)
tessera_core_test(test_sha256_digest)

# Shard store and download against the real coordinator over HTTPS (killed and restarted mid-way).
tessera_core_test(test_shard_download)
target_sources(test_shard_download PRIVATE CoordinatorProcess.cpp CoordinatorProcess.h)
add_dependencies(test_shard_download tessera-coordinator)
target_link_libraries(test_shard_download PRIVATE Qt6::Network)
target_compile_definitions(test_shard_download PRIVATE TESSERA_COORDINATOR_PATH="$<TARGET_FILE:tessera-coordinator>")

# The real tessera-node process against the real coordinator.
tessera_core_test(test_node_process)
target_sources(test_node_process PRIVATE CoordinatorProcess.cpp CoordinatorProcess.h NodeProcess.cpp NodeProcess.h)
add_dependencies(test_node_process tessera-coordinator tessera-node)
target_link_libraries(test_node_process PRIVATE Qt6::Network Qt6::Sql)
target_compile_definitions(test_node_process PRIVATE TESSERA_COORDINATOR_PATH="$<TARGET_FILE:tessera-coordinator>"
                           TESSERA_NODE_PATH="$<TARGET_FILE:tessera-node>")
set_tests_properties(core.test_node_process PROPERTIES TIMEOUT 600)

# A node moved to another stage by the coordinator (reassign), with three real nodes.
tessera_core_test(test_node_reassign)
target_sources(test_node_reassign PRIVATE CoordinatorProcess.cpp CoordinatorProcess.h NodeProcess.cpp NodeProcess.h)
add_dependencies(test_node_reassign tessera-coordinator tessera-node)
target_compile_definitions(test_node_reassign PRIVATE TESSERA_COORDINATOR_PATH="$<TARGET_FILE:tessera-coordinator>"
                           TESSERA_NODE_PATH="$<TARGET_FILE:tessera-node>")
set_tests_properties(core.test_node_reassign PROPERTIES TIMEOUT 600)
