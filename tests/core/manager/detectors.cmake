# SPDX-License-Identifier: Apache-2.0
# The pause rules' detectors against real things: real processes and /proc, a stand-in NVML loaded
# at run time, a private dbus-daemon with a UPower the test registers, and a real X server
# (xvfb-run) with a real X11 client (fake_game).

find_package(Qt6 REQUIRED COMPONENTS DBus)
find_package(X11)

# A game on the X server: one window, full-screen or not (also used by the lead's policy test and
# the benchmark).
if(X11_FOUND)
    add_executable(fake_game fake_game.cpp)
    target_link_libraries(fake_game PRIVATE tessera_build_options X11::X11)
endif()

# A libnvidia-ml whose temperature and graphics processes the test sets while it runs.
add_library(fake_nvml_manager SHARED fake_nvml_manager.c)
set_target_properties(fake_nvml_manager PROPERTIES OUTPUT_NAME fake-nvml-manager C_VISIBILITY_PRESET default)

tessera_manager_test(test_detectors test_detectors.cpp test_detectors.h test_detectors_exclusive_app.cpp
    test_detectors_time_windows.cpp test_detectors_gpu.cpp test_detectors_battery.cpp test_detectors_upower.cpp
    test_detectors_upower.h test_detectors_factory.cpp)
add_dependencies(test_detectors fake_nvml_manager)
find_program(DBUS_DAEMON dbus-daemon)
target_compile_definitions(test_detectors PRIVATE
    FAKE_NVML_MANAGER_PATH="$<TARGET_FILE:fake_nvml_manager>" DBUS_DAEMON_PATH="${DBUS_DAEMON}")
target_link_libraries(test_detectors PRIVATE Qt6::DBus ${CMAKE_DL_LIBS})
add_test(NAME manager.test_detectors COMMAND test_detectors)
set_tests_properties(manager.test_detectors PROPERTIES LABELS manager TIMEOUT 120)

# X11 only: Windows and macOS have no X server to start.
if(NOT X11_FOUND)
    return()
endif()
tessera_manager_test(test_x11_detectors test_x11_detectors.cpp)
add_dependencies(test_x11_detectors fake_game)
target_compile_definitions(test_x11_detectors PRIVATE FAKE_GAME_PATH="$<TARGET_FILE:fake_game>")
target_link_libraries(test_x11_detectors PRIVATE X11::X11)
# XTest fakes input, to show that input ends idleness; without it that part is skipped.
if(X11_XTest_FOUND)
    target_link_libraries(test_x11_detectors PRIVATE X11::Xtst)
    target_compile_definitions(test_x11_detectors PRIVATE TESSERA_HAVE_XTEST=1)
endif()
if(XVFB_RUN)
    add_test(NAME manager.test_x11_detectors
        COMMAND ${XVFB_RUN} -a -s "-screen 0 1280x720x24" $<TARGET_FILE:test_x11_detectors>)
else()
    add_test(NAME manager.test_x11_detectors COMMAND test_x11_detectors)
endif()
set_tests_properties(manager.test_x11_detectors PROPERTIES LABELS manager TIMEOUT 120)
