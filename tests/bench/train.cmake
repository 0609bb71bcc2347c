# benchmarks of gpu/train (tessera_gpu_bench(NAME) per file)
