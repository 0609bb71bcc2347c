# tests of gpu/codec (tessera_gpu_test(NAME) per file)
tessera_gpu_test(test_codec)
tessera_gpu_test(test_codec_malformed)
