# benchmarks of gpu/model (tessera_gpu_bench(NAME) per file)
tessera_gpu_bench(bench_stage_model)
