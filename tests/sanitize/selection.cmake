# SPDX-License-Identifier: Apache-2.0
# The tests the sanitizer builds run (cmake/TesseraSanitize.cmake), by ctest name.
#
# make sanitize (ASan + UBSan, label asan): every parser of untrusted bytes and what stands next to it,
# all torch-free: the fuzz targets' corpus replays (every fuzz.* test, tests/fuzz; the codec's has no
# clang build), the wire formats (core/protocol), the HTTP server (core/coordinator/http, on real
# sockets) and base/ (JSON, SHA-256, manifests, model config, block quantisation).
set(TESSERA_ASAN_TESTS
    core.test_task_frame core.test_task_message core.test_session_messages core.test_admission_claims
    core.test_credits_page core.test_identity
    core.test_http_server core.test_http_ranges
    base.test_block_quant base.test_json base.test_json_writer base.test_sha256 base.test_shard_manifest
    base.test_model_config)

# make tsan (ThreadSanitizer, label tsan): the node's engine thread (the worker, its throttle, the task
# runner that feeds it), its control socket, and the desktop app's supervision of a real node and
# coordinator (both TSan builds too). Qt and LibTorch are not instrumented, nor is gpu/ (see
# cmake/TesseraSanitize.cmake): tsan.supp silences their own frames, and nothing of ours.
set(TESSERA_TSAN_TESTS
    core.test_mailbox core.test_compute_throttle core.test_engine_worker core.test_task_runner core.test_control_socket
    manager.test_node_supervisor)
