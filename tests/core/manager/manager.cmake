# SPDX-License-Identifier: Apache-2.0
# The lead's tests: the settings registry, the pause policy's state machine, the supervisor of a
# real tessera-node against a real coordinator, and pausing while gaming under a real X server.
# test_node_status_text: the node's status in the sentences the app shows (pure).
foreach(name test_app_settings test_pause_policy test_node_status_text)
    tessera_manager_test(${name} ${name}.cpp)
    add_test(NAME manager.${name} COMMAND ${name})
    set_tests_properties(manager.${name} PROPERTIES LABELS manager TIMEOUT 60)
endforeach()

# The supervisor of a real tessera-node against a real coordinator.
tessera_manager_test(test_node_supervisor test_node_supervisor.cpp)
target_link_libraries(test_node_supervisor PRIVATE tessera_test_processes)
add_test(NAME manager.test_node_supervisor COMMAND test_node_supervisor)
set_tests_properties(manager.test_node_supervisor PROPERTIES LABELS manager TIMEOUT 300)
tessera_sanitizer_test(manager.test_node_supervisor test_node_supervisor)

# Pausing while gaming end to end: the Manager, the real detectors and a real node, under Xvfb with
# a real full-screen X11 window (fake_game, from detectors.cmake; X11 only). -noreset: Xvfb would
# otherwise reset whenever its last client leaves, between one fake game and the next.
if(TARGET fake_game)
    tessera_manager_test(test_pause_while_gaming test_pause_while_gaming.cpp)
target_link_libraries(test_pause_while_gaming PRIVATE tessera_test_processes)
add_dependencies(test_pause_while_gaming fake_game)
target_compile_definitions(test_pause_while_gaming PRIVATE TESSERA_FAKE_GAME_PATH="$<TARGET_FILE:fake_game>")
    if(XVFB_RUN)
        add_test(NAME manager.test_pause_while_gaming
            COMMAND ${XVFB_RUN} -a -s "-screen 0 1280x720x24 -noreset" $<TARGET_FILE:test_pause_while_gaming>)
    else()
        add_test(NAME manager.test_pause_while_gaming COMMAND test_pause_while_gaming)
    endif()
    set_tests_properties(manager.test_pause_while_gaming PROPERTIES LABELS manager TIMEOUT 300)
endif()

# The Manager with a real node and coordinator: the disk limit, a pause kept across app restarts.
tessera_manager_test(test_manager test_manager.cpp)
target_link_libraries(test_manager PRIVATE tessera_test_processes)
add_test(NAME manager.test_manager COMMAND test_manager)
set_tests_properties(manager.test_manager PROPERTIES LABELS manager TIMEOUT 300)
