# tests of gpu/shard (tessera_gpu_test(NAME) per file)
