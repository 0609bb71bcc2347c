# tests of gpu/train
tessera_gpu_test(test_sparta)
tessera_gpu_test(test_data_source)
tessera_gpu_test(test_training_data)
