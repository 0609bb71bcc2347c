# SPDX-License-Identifier: Apache-2.0
# The dashboard's sources and the app's chores: history on real SQLite files (the node's ledger
# written by a real LocalLedger), the swarm's status from the real tessera-coordinator over TLS,
# the autostart entry in a temporary XDG config folder, and one instance per user across two
# processes (the test starts itself as the second).
foreach(name test_history test_autostart test_single_instance)
    tessera_manager_test(${name} ${name}.cpp)
endforeach()

tessera_manager_test(test_swarm_status_client test_swarm_status_client.cpp)
target_link_libraries(test_swarm_status_client PRIVATE tessera_test_processes)

foreach(name test_history test_swarm_status_client test_autostart test_single_instance)
    add_test(NAME manager.${name} COMMAND ${name})
    set_tests_properties(manager.${name} PROPERTIES LABELS manager TIMEOUT 120)
endforeach()
