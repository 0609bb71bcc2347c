# gpu/train: data, optimizer, SPARTA averaging, the in-process swarm simulator.
target_sources(tessera_gpu PRIVATE
    ${CMAKE_CURRENT_LIST_DIR}/DataSource.cpp ${CMAKE_CURRENT_LIST_DIR}/DataSource.h
    ${CMAKE_CURRENT_LIST_DIR}/OptimizerOptions.h
    ${CMAKE_CURRENT_LIST_DIR}/Sparta.cpp ${CMAKE_CURRENT_LIST_DIR}/Sparta.h
    ${CMAKE_CURRENT_LIST_DIR}/StageOptimizer.cpp ${CMAKE_CURRENT_LIST_DIR}/StageOptimizer.h
    ${CMAKE_CURRENT_LIST_DIR}/SwarmSimulator.cpp ${CMAKE_CURRENT_LIST_DIR}/SwarmSimulator.h
    ${CMAKE_CURRENT_LIST_DIR}/TrainingData.cpp ${CMAKE_CURRENT_LIST_DIR}/TrainingData.h)
