# benchmarks of gpu/train (tessera_gpu_bench(NAME) per file)
tessera_gpu_bench(bench_learning)
