# benchmarks of gpu/model (tessera_gpu_bench(NAME) per file)
