# tests of gpu/engine (tessera_gpu_test(NAME) per file)
tessera_gpu_test(test_stage_engine)
# Built like core/: tessera_gpu only, no torch include path. It fails to compile if
# engine/StageEngine.h or engine/TokenFrame.h ever include a torch header.
add_executable(test_token_frame test_token_frame.cpp GpuTest.cpp)
target_include_directories(test_token_frame PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_link_libraries(test_token_frame PRIVATE tessera_build_options tessera_gpu)
add_test(NAME gpu.test_token_frame COMMAND test_token_frame)
set_tests_properties(gpu.test_token_frame PROPERTIES LABELS gpu TIMEOUT 300)
