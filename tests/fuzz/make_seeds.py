#!/usr/bin/env python3
"""Writes the seed corpora of tests/fuzz (corpus/<target>/seed-*): small valid inputs of each format,
as the tests and the real peers make them, and the edge cases next to them. Inputs found by fuzzing
(crash-*, timeout-*, found-*) are kept beside the seeds and never touched here.

    tests/fuzz/make_seeds.py      rewrites every seed-* file (deterministic: same bytes every run)
"""
import json
import os
import struct
import base64
import hashlib

HERE = os.path.dirname(os.path.abspath(__file__))
CORPUS = os.path.join(HERE, "corpus")


def crc32c(data: bytes) -> int:
    crc = 0xFFFFFFFF
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ (0x82F63B78 if crc & 1 else 0)
    return crc ^ 0xFFFFFFFF


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def compact(obj) -> bytes:
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def pattern(n: int, salt: int = 0) -> bytes:
    return bytes((i * 37 + salt) & 0xFF for i in range(n))


def write(target: str, name: str, data):
    folder = os.path.join(CORPUS, target)
    os.makedirs(folder, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    with open(os.path.join(folder, "seed-" + name), "wb") as f:
        f.write(data)


def clear_seeds():
    if not os.path.isdir(CORPUS):
        return
    for target in os.listdir(CORPUS):
        for name in os.listdir(os.path.join(CORPUS, target)):
            if name.startswith("seed-"):
                os.remove(os.path.join(CORPUS, target, name))


# --- core/coordinator/http ----------------------------------------------------------------------

def http():
    crlf = lambda *lines: "\r\n".join(lines)
    t = "http_request"
    write(t, "get-root", crlf("GET / HTTP/1.1", "Host: coordinator"))
    write(t, "get-shard-range", crlf("GET /v1/shards/0/3/stage-0.safetensors?x=1&y=%20 HTTP/1.1",
                                     "Host: coordinator:8443", "Range: bytes=0-99", 'If-Range: "3-a1b2"',
                                     "Connection: keep-alive, TE"))
    write(t, "post-admission", crlf("POST /v1/admission HTTP/1.1", "Host: c", "Content-Type: application/json",
                                    "Content-Length: 512", "Expect: 100-continue"))
    write(t, "websocket-upgrade", crlf("GET /v1/session HTTP/1.1", "Host: c", "Upgrade: websocket",
                                       "Connection: Upgrade", "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==",
                                       "Sec-WebSocket-Version: 13", "Authorization: Bearer abc"))
    write(t, "http10-no-host", crlf("HEAD /v1/info HTTP/1.0", "Connection: keep-alive"))
    write(t, "percent-encoded", crlf("GET /v1/nodes/%41b%2Fc/credits?after=%FF HTTP/1.1", "Host: c"))
    write(t, "dot-segment", crlf("GET /v1/shards/0/../../etc/passwd HTTP/1.1", "Host: c"))
    write(t, "bare-lf", "GET / HTTP/1.1\nHost: c")
    write(t, "obs-fold", crlf("GET / HTTP/1.1", "Host: c", "X-A: 1", " folded"))
    write(t, "http2", crlf("GET / HTTP/2.0", "Host: c"))
    write(t, "two-hosts", crlf("GET / HTTP/1.1", "Host: a", "Host: b"))
    write(t, "chunked", crlf("POST /v1/admission HTTP/1.1", "Host: c", "Transfer-Encoding: chunked",
                             "Content-Length: 5"))
    write(t, "ows-values", crlf("GET /a/b/ HTTP/1.1", "Host:\t c \t", "Range:  bytes = -5 ", "Empty:"))

    t = "byte_range"
    size = lambda n: struct.pack("<Q", n)[:4] + struct.pack("<I", (n >> 32) | 0x80000000)
    for name, n, has_if, rng, if_range, etag in [
        ("first-100", 4096, 0, "bytes=0-99", "", '"e"'),
        ("open-ended", 4096, 0, "bytes=100-", "", '"e"'),
        ("suffix", 4096, 0, "bytes=-500", "", '"e"'),
        ("suffix-larger-than-file", 10, 0, "bytes=-500", "", '"e"'),
        ("past-end", 10, 0, "bytes=10-20", "", '"e"'),
        ("two-ranges", 4096, 0, "bytes=0-1, 5-6", "", '"e"'),
        ("if-range-match", 4096, 1, "bytes=1-2", '"e"', '"e"'),
        ("if-range-weak", 4096, 1, "bytes=1-2", 'W/"e"', 'W/"e"'),
        ("if-range-date", 4096, 1, "bytes=1-2", "Sat, 01 Jan 2000 00:00:00 GMT", '"e"'),
        ("huge-numbers", 1 << 40, 0, "bytes=99999999999999999999999-", "", '"e"'),
        ("backwards", 4096, 0, "bytes=9-1", "", '"e"'),
        ("empty-file", 0, 0, "bytes=-1", "", '"e"'),
        ("units-case", 4096, 0, " BYTES = 7 - 8 , ", "", '"e"'),
    ]:
        write(t, name, size(n) + bytes([has_if]) + "\n--\n".join([rng, if_range, etag]).encode())


# --- core/protocol ------------------------------------------------------------------------------

def frame(ftype: int, payload: bytes, version=2, reserved=0, crc=None) -> bytes:
    c = crc32c(payload) if crc is None else crc
    return b"TSF1" + struct.pack("<HBBII", version, ftype, reserved, len(payload), c) + payload


def message(header, frames=()) -> bytes:
    j = compact(header) if not isinstance(header, bytes) else header
    return b"TSM1" + struct.pack("<I", len(j)) + j + b"".join(frames)


def token_frame(batch, seq, ids) -> bytes:
    return b"TST1" + struct.pack("<II", batch, seq) + b"".join(struct.pack("<I", i) for i in ids)


def quantised(values, bits) -> bytes:
    # gpu/base/BlockQuant: scales per 256 values, then the codes, zero-padded to 4 bytes.
    n = len(values)
    blocks = (n + 255) // 256
    if bits == 32:
        return b"".join(struct.pack("<f", v) for v in values)
    levels = 127 if bits == 8 else 7
    out = bytearray()
    codes = bytearray((n if bits == 8 else (n + 1) // 2))
    for b in range(blocks):
        block = values[b * 256:(b + 1) * 256]
        scale = struct.unpack("<f", struct.pack("<f", max(abs(v) for v in block) / levels))[0]
        out += struct.pack("<f", scale)
        for i, v in enumerate(block, start=b * 256):
            code = 0 if scale == 0 else max(-levels, min(levels, round(v / scale)))
            if bits == 8:
                codes[i] = code & 0xFF
            else:
                codes[i // 2] |= (code + 8) << (4 * (i % 2))
    codes += bytes((-len(codes)) % 4)
    return bytes(out + codes)


def protocol():
    t = "task_frame"
    for ftype in range(1, 7):
        write(t, "type-%d" % ftype, frame(ftype, pattern(16 if ftype != 6 else 32, ftype)))
    write(t, "empty-payload", frame(1, b""))
    write(t, "token-frame-payload", frame(1, token_frame(2, 3, [1, 2, 3, 4, 5, 255])))
    write(t, "version-1", frame(1, pattern(8), version=1))
    write(t, "version-3", frame(1, pattern(8), version=3))
    write(t, "bad-crc", frame(2, pattern(8), crc=1))
    write(t, "partition-not-fp32", frame(6, pattern(6)))
    write(t, "reserved-set", frame(3, pattern(4), reserved=1))

    t = "task_message"
    task = {"type": "task", "kind": "forward", "task_id": 12, "microbatch": 7}
    write(t, "task-forward", message(task, [frame(1, token_frame(1, 4, [1, 2, 3, 4]))]))
    write(t, "task-forward-backward", message(
        {"type": "task", "kind": "forward_backward", "task_id": 13, "microbatch": 7, "step": 2},
        [frame(1, pattern(40, 1)), frame(5, token_frame(1, 2, [5, 6]))]))
    write(t, "task-result", message({"type": "task_result", "task_id": 12, "kind": "forward", "ok": True,
                                     "microbatch": 7, "compute_seconds": 0.25, "tokens": 4},
                                    [frame(2, pattern(64, 2))]))
    write(t, "no-frame", message({"type": "heartbeat"}))
    for bits in (32, 8, 4):
        values = [((i * 7919) % 200 - 100) / 37.0 for i in range(300)]
        write(t, "gradient-share-%dbit" % bits, message(
            {"type": "gradient_share", "step": 3, "microbatches": 2, "basis": 1, "ok": True, "bits": bits},
            [frame(6, quantised(values, bits))]))
    write(t, "gradient-result", message(
        {"type": "gradient_result", "step": 3, "round": 4, "included": True, "replicas": 2,
         "learning_rate": 0.001, "clip_scale": 1, "bits": 8, "values": 3},
        [frame(6, quantised([1.0, -2.0, 0.5], 8))]))
    write(t, "gradient-share-first-round", message(
        {"type": "gradient_share", "step": 3, "microbatches": 2, "basis": 1, "ok": True, "first_round": True},
        [frame(6, struct.pack("<4f", 0.5, -0.25, 1, 2))]))
    write(t, "gradient-basis", message({"type": "gradient_basis", "step": 3, "round": 1},
                                       [frame(6, struct.pack("<4f", 0.5, 0.5, 0.5, 0.5))]))
    write(t, "average-share", message({"type": "average_share", "round": 2, "partition": 0, "partitions": 2,
                                       "ok": True}, [frame(6, struct.pack("<4f", 1, 2, 3, 4))]))
    write(t, "average-share-chunk", message({"type": "average_share", "round": 2, "partition": 0, "partitions": 2,
                                             "ok": True, "offset": 4, "total": 12},
                                            [frame(6, struct.pack("<4f", 5, 6, 7, 8))]))
    write(t, "gradient-result-chunk", message(
        {"type": "gradient_result", "step": 3, "round": 4, "included": True, "replicas": 2,
         "learning_rate": 0.001, "clip_scale": 1, "values": 8, "offset": 4, "total": 8},
        [frame(6, struct.pack("<4f", 1, 2, 3, 4))]))
    write(t, "eight-frames", message({"type": "sync", "round": 1, "partitions": 8},
                                     [frame(6, pattern(8, i)) for i in range(8)]))
    write(t, "nine-frames", message({"type": "sync", "round": 1, "partitions": 9},
                                    [frame(6, pattern(4, i)) for i in range(9)]))
    write(t, "bad-frame-keeps-header", message(task, [frame(1, pattern(8), crc=0)]))
    write(t, "trailing-garbage", message(task, [frame(1, pattern(8))]) + b"xyz")
    write(t, "json-not-object", message(b"[1,2]"))
    write(t, "json-truncated", b"TSM1" + struct.pack("<I", 100) + b'{"type":"task"}')

    t = "session_messages"
    for m in [
        {"type": "heartbeat"},
        {"type": "ready", "stage": 1, "version": 3},
        {"type": "unavailable", "reason": "paused by the user"},
        {"type": "task_result", "task_id": 5, "kind": "probe", "ok": True, "compute_seconds": 1.5,
         "loss": 2.25, "microbatch": -1},
        {"type": "task_result", "task_id": 6, "kind": "backward", "ok": False, "error": "no graph",
         "error_kind": "missing_graph", "microbatch": 9},
        {"type": "step_done", "step": 4, "ok": True, "microbatches": 8},
        {"type": "sync_done", "round": 2, "ok": False, "error": "disk full"},
        {"type": "heartbeat_ack", "server_time_ms": 1700000000000},
        {"type": "error", "error": "task_result.task_id: missing"},
        {"type": "task", "task_id": 1, "kind": "probe", "batch": 2, "seq": 16, "seed": 42},
        {"type": "task", "task_id": 2, "kind": "forward", "microbatch": 0, "step": 3},
        {"type": "step", "step": 4, "basis": 2, "rank": 1, "bits": 8},
        {"type": "average", "round": 3, "partition": 1, "partitions": 4, "step": 4},
        {"type": "sync_request", "round": 3, "partitions": 4},
        {"type": "reassign", "stage": 2, "reason": "stage 2 needs a node"},
        {"type": "credits"},
    ]:
        write(t, m["type"] + ("-" + m["kind"] if "kind" in m else ""), compact(m))
    write(t, "gradient-result-as-text", compact({"type": "gradient_result", "step": 1, "round": 1,
                                                  "included": True, "replicas": 1, "learning_rate": 0.1,
                                                  "clip_scale": 1}))
    write(t, "id-beyond-2-53", '{"type":"ready","stage":0,"version":9007199254740993}')
    write(t, "fractional-id", '{"type":"task","task_id":1.5,"kind":"forward","microbatch":0}')
    write(t, "unknown-type", '{"type":"gossip"}')
    write(t, "probe-without-batch", '{"type":"task","task_id":3,"kind":"probe"}')
    write(t, "average-partition-out-of-range", '{"type":"average","round":1,"partition":4,"partitions":4}')
    write(t, "not-json", "heartbeat")

    t = "control_messages"
    token = "0123456789abcdef"
    for name, line in [
        ("status", {"token": token, "command": "status", "arguments": {}}),
        ("pause-hard", {"token": token, "command": "pause", "arguments": {"hard": True}}),
        ("resume", {"token": token, "command": "resume"}),
        ("stop", {"token": token, "command": "stop", "arguments": None}),
        ("set-limit", {"token": token, "command": "set-limit", "arguments": {"percent": 37.5}}),
        ("set-limit-out-of-range", {"token": token, "command": "set-limit", "arguments": {"percent": 0}}),
        ("unknown-command", {"token": token, "command": "reboot" * 20}),
        ("arguments-not-object", {"token": token, "command": "pause", "arguments": [1]}),
    ]:
        write(t, name, compact(line) + b"\n")

    t = "admission"
    hardware = {"device": "cuda:0", "name": "NVIDIA GeForce RTX 4090", "memory_bytes": 25757220864,
                "driver": "550.54"}
    bench = {"gflops": 82000.5, "dtype": "bf16", "memory_gbps": 1008}
    request = {"node_key": b64url(pattern(32, 1)), "nonce": b64url(pattern(32, 2)), "hardware": hardware,
               "bench": bench, "client_version": "0.2.0", "signature": b64url(pattern(64, 3))}
    write(t, "admission-cuda", compact(request))
    cpu = dict(request, hardware={"device": "cpu", "name": "AMD Ryzen 9", "memory_bytes": 34359738368},
               bench={"gflops": 512, "dtype": "fp32"})
    write(t, "admission-cpu", compact(cpu))
    write(t, "admission-unknown-field", compact(dict(request, extra=1)))
    write(t, "admission-padded-key", compact(dict(request, node_key=b64url(pattern(32, 1)) + "=")))
    write(t, "challenge", compact({"node_key": b64url(pattern(32, 1))}))
    write(t, "id-segment", "17")
    write(t, "client-version", "12.345.6")
    write(t, "not-an-object", "[]")

    t = "credits_page"
    node = hashlib.sha256(pattern(32, 1)).hexdigest()
    receipts = []
    prev = "0" * 64
    for seq in (1, 2):
        h = hashlib.sha256(("%s%d" % (prev, seq)).encode()).hexdigest()
        receipts.append({"seq": seq, "issued_at": 1700000000000 + seq, "flop": 5000000000 * seq,
                         "micro_credits": 5 * seq, "prev_hash": prev, "hash": h,
                         "signature": b64url(pattern(64, seq))})
        prev = h
    page = {"node_id": node, "last_seq": 2, "total_micro_credits": 15, "total_credits": 0.000015,
            "coordinator_key": b64url(pattern(32, 9)), "receipts": receipts,
            "escrow": {"pending_flop": 100, "forfeited_flop": 0, "last_forfeit_reason": ""}}
    write(t, "two-receipts", compact(page))
    write(t, "no-receipts-no-escrow", compact({k: v for k, v in dict(page, receipts=[]).items() if k != "escrow"}))
    write(t, "seq-out-of-order", compact(dict(page, receipts=list(reversed(receipts)))))
    write(t, "seq-beyond-last", compact(dict(page, last_seq=1)))
    write(t, "fractional-flop", json.dumps(page).replace('"flop": 5000000000', '"flop": 5000000000.5'))


# --- gpu/ ---------------------------------------------------------------------------------------

TINY = {"name": "tiny", "vocab_size": 256, "d_model": 128, "n_layers": 8, "n_heads": 4, "n_kv_heads": 2,
        "ffn_hidden": 384, "max_seq_len": 256, "rope_theta": 10000, "norm_eps": 1e-05, "stages": 4,
        "seed": 1234, "codec": "none", "subspace_ratio": 8}


def manifest(**changes):
    m = {"format": "tessera-shard-manifest/1", "model_config_hash": hashlib.sha256(b"tiny").hexdigest(),
         "stage": 1, "version": 3, "step": 40, "file": "stage-1.safetensors", "file_size": 100,
         "sha256": hashlib.sha256(b"file").hexdigest(), "chunk_size": 64,
         "chunks": [hashlib.sha256(b"a").hexdigest(), hashlib.sha256(b"b").hexdigest()]}
    m.update(changes)
    return compact(m)


def safetensors(tensors, metadata=None, pad=0, header_override=None):
    header = {}
    if metadata is not None:
        header["__metadata__"] = metadata
    data = b""
    for name, dtype, shape, payload in tensors:
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [len(data), len(data) + len(payload)]}
        data += payload
    h = header_override if header_override is not None else compact(header) + b" " * pad
    return struct.pack("<Q", len(h)) + h + data


def codec_header(codec, kind, dtype, token_bytes, batch, seq, width, rank, block):
    return b"TSC1" + bytes([codec, kind, dtype, token_bytes]) + struct.pack("<5I", batch, seq, width, rank, block)


def gpu():
    t = "model_config"
    write(t, "tiny", compact(TINY))
    write(t, "small-subspace", compact(dict(TINY, name="small", vocab_size=32000, d_model=768, n_layers=12,
                                            n_heads=12, n_kv_heads=4, ffn_hidden=2048, max_seq_len=1024,
                                            codec="subspace", subspace_ratio=24)))
    write(t, "8b-int8", compact(dict(TINY, name="8b", vocab_size=128256, d_model=4096, n_layers=32, n_heads=32,
                                     n_kv_heads=8, ffn_hidden=14336, max_seq_len=4096, rope_theta=500000.0,
                                     stages=7, codec="int8", subspace_ratio=100)))
    write(t, "many-stages", compact(dict(TINY, d_model=8, n_heads=1, n_kv_heads=1, n_layers=1024, stages=1024)))
    minimal = {k: TINY[k] for k in ("name", "vocab_size", "d_model", "n_layers", "n_heads", "n_kv_heads",
                                    "ffn_hidden", "max_seq_len", "stages")}
    write(t, "required-only", compact(minimal))
    write(t, "unknown-field", compact(dict(TINY, dropout=0.1)))
    write(t, "odd-head-dim", compact(dict(TINY, d_model=12, n_heads=4)))

    t = "shard_manifest"
    write(t, "two-chunks", manifest())
    write(t, "signed", manifest(signature=b64url(pattern(64, 5))))
    write(t, "empty-file", manifest(file_size=0, chunks=[]))
    write(t, "path-in-file", manifest(file="../stage-1.safetensors"))
    write(t, "wrong-chunk-count", manifest(chunks=[hashlib.sha256(b"a").hexdigest()]))
    write(t, "uppercase-hash", manifest(sha256=hashlib.sha256(b"file").hexdigest().upper()))

    t = "json"
    for name, doc in [
        ("object", '{"a":[1,2.5,-3e-2,true,false,null],"b":{"c":"d"},"e":""}'),
        ("escapes", '"\\"\\\\\\/\\b\\f\\n\\r\\t\\u0000\\u00e9\\ud83d\\ude00"'),
        ("utf8", '["\u00e9\u4e2d\U0001F600"]'),
        ("numbers", '[0,-0,-0.0,1e308,1e-400,123456789012345678901234567890,9223372036854775807,'
                    '-9223372036854775808,9223372036854775808,0.1e+1]'),
        ("nested", "[" * 40 + "]" * 40),
        ("whitespace", ' \t\r\n{ "k" : [ ] } \n'),
        ("duplicate-key", '{"a":1,"a":2}'),
        ("lone-surrogate", '"\\ud800"'),
        ("overlong-utf8", b'"\xc0\xaf"'),
        ("leading-zero", "01"),
        ("trailing", "{} x"),
        ("number-out-of-range", "1e309"),
    ]:
        write(t, name, doc)

    t = "safetensors"
    f32 = struct.pack("<6f", *range(6))
    write(t, "two-tensors", safetensors([("layers.0.w", "F32", [2, 3], f32), ("embed", "BF16", [2], b"\x80\x3f" * 2)],
                                        metadata={"format": "pt", "stage": "1"}))
    write(t, "padded-header", safetensors([("w", "F32", [1], struct.pack("<f", 1))], pad=5))
    write(t, "empty-tensor", safetensors([("e", "I64", [0, 5], b""), ("w", "U8", [3], b"abc")]))
    write(t, "scalar", safetensors([("s", "F64", [], struct.pack("<d", 1.5))]))
    write(t, "hole", safetensors([], header_override=compact(
        {"w": {"dtype": "U8", "shape": [1], "data_offsets": [1, 2]}})) + b"xy")
    write(t, "trailing-bytes", safetensors([("w", "U8", [1], b"a")]) + b"z")
    write(t, "unknown-dtype", safetensors([("w", "F4", [2], b"a")]))
    write(t, "header-past-end", struct.pack("<Q", 1000) + b"{}")
    write(t, "overflowing-shape", safetensors([], header_override=compact(
        {"w": {"dtype": "F32", "shape": [4294967296, 4294967296, 16], "data_offsets": [0, 0]}})))

    t = "frame_header"
    write(t, "none-activation", b"\x00" + codec_header(1, 1, 1, 2, 2, 3, 128, 0, 0))
    write(t, "int8-gradient", b"\x00" + codec_header(2, 2, 4, 0, 1, 1, 16, 0, 64))
    write(t, "unknown-codec", b"\x00" + codec_header(9, 1, 1, 2, 1, 1, 16, 0, 0))
    write(t, "tokens-tiny", b"\x00" + token_frame(2, 3, [0, 1, 2, 253, 254, 255]))
    write(t, "tokens-small", b"\x01" + token_frame(1, 2, [31999, 7]))
    write(t, "tokens-out-of-vocab", b"\x02" + token_frame(1, 2, [1, 2]))
    write(t, "tokens-too-many", b"\x02" + token_frame(3, 3, [0] * 9))
    write(t, "tokens-truncated", b"\x00" + token_frame(2, 2, [1, 2, 3]))

    t = "block_quant"
    values = [((i * 31) % 17 - 8) / 3.0 for i in range(300)]
    write(t, "8bit-300", bytes([1]) + struct.pack("<H", 300) + quantised(values, 8))
    write(t, "4bit-300", bytes([2]) + struct.pack("<H", 300) + quantised(values, 4))
    write(t, "4bit-odd", bytes([2]) + struct.pack("<H", 3) + quantised([1.0, -1.0, 0.25], 4))
    write(t, "32bit", bytes([0]) + struct.pack("<H", 4) + quantised([1.0, 2.0, -3.0, 0.0], 32))
    write(t, "8bit-code-128", bytes([1]) + struct.pack("<H", 1) + struct.pack("<f", 1.0) + b"\x80\x00\x00\x00")
    write(t, "4bit-dirty-padding", bytes([2]) + struct.pack("<H", 1) + struct.pack("<f", 1.0) + b"\x01\x00\x00\x01")
    write(t, "huge-scale", bytes([1]) + struct.pack("<H", 1) + struct.pack("<f", 3e38) + b"\x7f\x00\x00\x00")

    t = "codec_decode"
    d, batch, seq = 16, 1, 2
    n = batch * seq
    tokens2 = b"".join(struct.pack("<H", i) for i in (3, 250))
    tokens3 = b"".join(struct.pack("<I", i)[:3] for i in (3, 69999))
    act, grad = 4, 0  # bit 2 of the selector byte
    write(t, "none-fp32-activation", bytes([0 | act]) + codec_header(1, 1, 1, 2, batch, seq, d, 0, 0) +
          struct.pack("<%df" % (n * d), *[i / 8 for i in range(n * d)]) + tokens2)
    write(t, "none-bf16-gradient", bytes([0 | grad]) + codec_header(1, 2, 2, 0, batch, seq, d, 0, 0) +
          b"\x80\x3f" * (n * d))
    write(t, "int8-activation", bytes([1 | act]) + codec_header(2, 1, 4, 2, batch, seq, d, 0, 64) +
          struct.pack("<f", 0.5) + pattern(n * d) + tokens2)
    write(t, "int8-gradient-block-5", bytes([1 | grad]) + codec_header(2, 2, 4, 0, batch, seq, d, 0, 5) +
          struct.pack("<7f", *([0.25] * 7)) + pattern(n * d))
    write(t, "subspace-int8-activation", bytes([2 | act]) + codec_header(3, 1, 4, 2, batch, seq, d, 4, 0) +
          struct.pack("<2f", 0.5, 1.0) + pattern(n * 4) + tokens2)
    write(t, "subspace-fp16-gradient", bytes([2 | grad]) + codec_header(3, 2, 3, 0, batch, seq, d, 4, 0) +
          b"\x00\x3c" * (n * 4))
    write(t, "none-3-byte-tokens", bytes([3 | act]) + codec_header(1, 1, 1, 3, batch, seq, d, 0, 0) +
          bytes(n * d * 4) + tokens3)
    write(t, "int8-nan-scale", bytes([1 | grad]) + codec_header(2, 2, 4, 0, batch, seq, d, 0, 64) +
          struct.pack("<f", float("nan")) + pattern(n * d))
    write(t, "token-out-of-vocab", bytes([0 | act]) + codec_header(1, 1, 1, 2, batch, seq, d, 0, 0) +
          bytes(n * d * 4) + b"\xff\xff\x00\x00")


if __name__ == "__main__":
    clear_seeds()
    http()
    protocol()
    gpu()
    count = sum(len([f for f in os.listdir(os.path.join(CORPUS, t)) if f.startswith("seed-")])
                for t in os.listdir(CORPUS))
    print("wrote %d seeds into %s" % (count, CORPUS))
