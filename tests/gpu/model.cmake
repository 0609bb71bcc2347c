# tests of gpu/model (tessera_gpu_test(NAME) per file)
