# benchmarks of gpu/codec (tessera_gpu_bench(NAME) per file)
tessera_gpu_bench(bench_codec)
