# tests of gpu/train (tessera_gpu_test(NAME) per file)
