# gpu/engine/: the torch-free facade the node's engine drives (codec bytes in, codec bytes out).
target_sources(tessera_gpu PRIVATE
)
