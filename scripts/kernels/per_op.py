"""Per-operation terms of the simulator's timing model that whole-pass measurements do not separate.

Run on one GPU with PyTorch (CUDA events; CUDA graphs where the launch cost must be left out):
  launch     per-kernel launch cost, eager and inside a CUDA graph (a tiny kernel, 2,000 launches);
  elementwise  RMSNorm, SiLU-and-multiply, residual add and FP8 activation quantization as memory
             passes over M rows of Llama-3.1-8B widths (hidden 4096, MLP 14336), in CUDA graphs;
  logits     the output head (hidden 4096 -> vocab 128256, bf16) plus argmax / softmax sampling
             for B rows;
  prefill_attention  causal flash attention (SDPA, 32 query / 8 KV heads of 128) for T new tokens,
             alone, with and without past context;
  decode_attention  one decode step's attention (q_len 1) over B sequences of context L, and a
             split-context ("multi-block") version that splits each sequence into chunks and
             merges the partial results, as TensorRT-LLM's multi-block mode does.
Writes $OUT/per_op.json. Each case is guarded: one failure costs one row.
`python3 scripts/kernels/per_op.py` (about two minutes on an H100).
"""
import json
import os
import time
import traceback

import torch
import torch.nn.functional as F

OUT = os.environ.get("OUT", "/tmp/out")
os.makedirs(OUT, exist_ok=True)
dev = torch.device("cuda")
H, I, NH, KVH, HD, V = 4096, 14336, 32, 8, 128, 128256
res = {"env": {}, "launch": {}, "elementwise": [], "logits": [], "prefill_attention": [],
       "decode_attention": [], "errors": []}
T0 = time.time()


def save():
    with open(os.path.join(OUT, "per_op.json"), "w") as f:
        json.dump(res, f, indent=1)


def timed(fn, warmup=3, iters=15):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(iters):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e))
    ts.sort()
    return ts[len(ts) // 2]


def graphed(fn, reps):
    """A CUDA graph of `reps` calls of fn; returns a callable replaying it."""
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(2):
            fn()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        for _ in range(reps):
            fn()
    return g.replay


def per_call_graphed(fn, reps=20):
    return timed(graphed(fn, reps)) / reps


def guard(name, fn):
    try:
        fn()
    except Exception as ex:
        res["errors"].append(f"{name}: {type(ex).__name__}: {ex}"[:400])
        traceback.print_exc()
    torch.cuda.empty_cache()
    save()


def env():
    p = torch.cuda.get_device_properties(0)
    res["env"] = {"gpu": p.name, "sms": p.multi_processor_count, "mem_gib": p.total_memory / 2**30,
                  "torch": torch.__version__, "cuda": torch.version.cuda}
    print(res["env"], flush=True)


def launch():
    x = torch.zeros(1, device=dev)
    n = 2000

    def many():
        for _ in range(n):
            x.add_(1.0)
    eager = timed(many, warmup=2, iters=7) / n
    g = graphed(lambda: x.add_(1.0), n)
    graph = timed(g, warmup=2, iters=7) / n
    res["launch"] = {"kernels": n, "eager_us_per_kernel": eager * 1e3, "graph_us_per_kernel": graph * 1e3}
    print("launch", res["launch"], flush=True)


def elementwise():
    w = torch.randn(H, device=dev, dtype=torch.bfloat16)
    for m in [1, 16, 64, 256, 1024, 4096, 16384]:
        x = torch.randn(m, H, device=dev, dtype=torch.bfloat16)
        r = torch.randn(m, H, device=dev, dtype=torch.bfloat16)
        gu = torch.randn(m, 2 * I, device=dev, dtype=torch.bfloat16)
        xi = torch.randn(m, I, device=dev, dtype=torch.bfloat16)
        scale = torch.tensor(0.5, device=dev)
        cases = {
            "rmsnorm": (lambda: F.rms_norm(x, (H,), w, 1e-5), 2 * m * H * 2),
            "residual_add": (lambda: r.add_(x), 3 * m * H * 2),
            "silu_mul": (lambda: F.silu(gu[:, :I]) * gu[:, I:], 3 * m * I * 2),
            "fp8_quant_hidden": (lambda: (x * scale).to(torch.float8_e4m3fn), m * H * 3),
            "fp8_quant_mlp": (lambda: (xi * scale).to(torch.float8_e4m3fn), m * I * 3),
        }
        for name, (fn, nbytes) in cases.items():
            ms = per_call_graphed(fn)
            res["elementwise"].append({"op": name, "rows": m, "ms": ms, "bytes": nbytes,
                                       "GBps": nbytes / ms / 1e6})
        print("elementwise", m, flush=True)


def logits():
    head = torch.randn(V, H, device=dev, dtype=torch.bfloat16) * 0.02
    for b in [1, 8, 32, 128, 256, 512, 1024, 2048]:
        h = torch.randn(b, H, device=dev, dtype=torch.bfloat16)
        gemm = per_call_graphed(lambda: h @ head.t(), reps=10)

        def greedy():
            return torch.argmax((h @ head.t()).float(), dim=-1)

        def sampled():
            p = torch.softmax((h @ head.t()).float() / 0.8, dim=-1)
            return torch.multinomial(p, 1)
        g = per_call_graphed(greedy, reps=10)
        try:
            s = per_call_graphed(sampled, reps=5)
        except Exception:  # multinomial may not capture; time it eagerly
            s = timed(sampled)
        res["logits"].append({"rows": b, "gemm_ms": gemm, "greedy_ms": g, "sampled_ms": s,
                              "gemm_tflops": 2 * b * H * V / gemm / 1e9})
        print("logits", res["logits"][-1], flush=True)


def prefill_attention():
    for t, past in [(128, 0), (256, 0), (512, 0), (1024, 0), (2048, 0), (4096, 0), (8192, 0), (16384, 0),
                    (512, 1536), (2048, 2048), (2048, 6144), (2048, 14336)]:
        q = torch.randn(1, NH, t, HD, device=dev, dtype=torch.bfloat16)
        k = torch.randn(1, KVH, past + t, HD, device=dev, dtype=torch.bfloat16)
        v = torch.randn(1, KVH, past + t, HD, device=dev, dtype=torch.bfloat16)
        if past == 0:
            fn = lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True, enable_gqa=True)
        else:
            # Chunked prefill: the chunk sees all past tokens and its own causal triangle.
            mask = torch.ones(t, past + t, device=dev, dtype=torch.bool).tril(diagonal=past)
            fn = lambda: F.scaled_dot_product_attention(q, k, v, attn_mask=mask, enable_gqa=True)
        ms = per_call_graphed(fn, reps=10)
        pairs = t * past + t * (t + 1) / 2
        flops = 4 * NH * HD * pairs
        res["prefill_attention"].append({"tokens": t, "past": past, "ms": ms, "pairs": pairs,
                                         "tflops": flops / ms / 1e9})
        print("prefill_attention", res["prefill_attention"][-1], flush=True)


def decode_attention():
    for b, ctx in [(1, 1024), (1, 8192), (1, 32768), (4, 8192), (8, 4096), (16, 2048), (32, 1024), (32, 8192),
                   (64, 512), (64, 4096), (128, 1024), (256, 512), (256, 2048), (512, 1024), (1024, 512)]:
        q = torch.randn(b, NH, 1, HD, device=dev, dtype=torch.bfloat16)
        k = torch.randn(b, KVH, ctx, HD, device=dev, dtype=torch.bfloat16)
        v = torch.randn(b, KVH, ctx, HD, device=dev, dtype=torch.bfloat16)
        plain = per_call_graphed(lambda: F.scaled_dot_product_attention(q, k, v, enable_gqa=True), reps=10)
        # Multi-block: split each sequence's context into chunks of 512 run as separate "sequences"
        # (queries replicated), then merge by log-sum-exp; q_len 1, so softmax is done by hand.
        chunks = max(1, ctx // 512)
        qg = q.view(b, KVH, NH // KVH, HD)

        def split():
            kc = k.view(b, KVH, chunks, ctx // chunks, HD)
            vc = v.view(b, KVH, chunks, ctx // chunks, HD)
            s = torch.einsum("bhgd,bhcld->bhcgl", qg, kc).float() * (HD ** -0.5)
            m = s.amax(-1, keepdim=True)
            p = torch.exp(s - m)
            o = torch.einsum("bhcgl,bhcld->bhcgd", p.to(torch.bfloat16), vc).float()
            l = p.sum(-1, keepdim=True)
            mm = m.amax(2, keepdim=True)
            f = torch.exp(m - mm)
            return ((o * f).sum(2) / (l * f).sum(2)).to(torch.bfloat16)
        split_ms = per_call_graphed(split, reps=10)
        kv = 2 * b * KVH * ctx * HD * 2
        res["decode_attention"].append({"batch": b, "context": ctx, "ms": plain, "kv_bytes": kv,
                                        "kv_GBps": kv / plain / 1e6, "split_ms": split_ms,
                                        "split_kv_GBps": kv / split_ms / 1e6})
        print("decode_attention", res["decode_attention"][-1], flush=True)
        del k, v


env()
for name, fn in [("launch", launch), ("elementwise", elementwise), ("logits", logits),
                 ("prefill_attention", prefill_attention), ("decode_attention", decode_attention)]:
    guard(name, fn)
res["env"]["seconds"] = time.time() - T0
save()
print("done", res["env"]["seconds"], "s", "errors:", res["errors"], flush=True)
