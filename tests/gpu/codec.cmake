# tests of gpu/codec (tessera_gpu_test(NAME) per file)
