#!/usr/bin/env python3
"""The GPU benchmark: aotc's CUDA artifacts against PyTorch on the same card, in the same run.

    tools/bench/gpu_bench.py prepare [--build build] [--cuda-arch sm_90] [--only gemm,models]
        on the build machine (no GPU needed): builds examples/run_model (libstdc++ static, so it
        runs on a machine without this toolchain) and exports, under .gpu-bench/, the GEMM
        (tools/bench/models/gemm.cpp: f32 tensors at fp32 and tf32, bf16 and fp16 tensors at
        bf16 and fp16, as torch.mm's), causal attention alone
        (tools/bench/models/attention.cpp, heads of 64 and 128) at fp32 and bf16, ResNet-50 at fp32, tf32 and
        bf16 and GPT-2 small at fp32 and bf16, with --weights-file external: the artifacts hold
        the kernels only (a few MiB), small enough for a device call; manifest.json records each
        one's weights size and export time.
    tools/bench/gpu_bench.py run [--repeats 3] [--peers eager,compile,aoti] [--deadline S]
        on the GPU machine (PyTorch with CUDA): writes random weights of each artifact's size
        (mapped with --map-weights-unchecked: times do not depend on the values), then for every
        case takes, in interleaved rounds, one sample of each side: aotc in a fresh run_model
        process (plain launches, and CUDA graphs), PyTorch eager, and with --peers torch.compile
        (max-autotune-no-cudagraphs and reduce-overhead) and torch.export + AOTInductor
        (aoti_compile_and_package, aoti_load_package). A sample is the median latency of
        --iters calls, each ending when its outputs are ready (torch.cuda.synchronize). Prints
        medians [min-max] in ms, aotc's ratio to each peer (below 1: aotc faster), GEMM TFLOPS,
        and the start-up of a fresh process (load + first inference). Peers whose compile would
        run past --deadline seconds from the start are skipped with a message.

A device call carries at most 64 MiB: everything `prepare` makes fits one (40 MiB with sm_90
cubins on 2026-11-29, equal kernels merged: each GPT-2 artifact 4.2 MiB, ResNet-50's 8.5-11.6
MiB, the GEMM group 3.4 MiB; carry .gpu-bench, or part of it: run skips artifacts that are not
there). prepare took 2.5 minutes on a 2-core build machine.

The PyTorch side runs at the artifact's precision: fp32 with TF32 off, tf32 with TF32 on for
matmul and cuDNN, bf16/fp16 under torch.autocast (the GEMM: torch.mm on bf16/fp16 tensors). aotc
stores the weights and the activations that only GEMMs read in the precision's 16-bit type and
keeps the others (residuals, norms' and softmax's inputs) in fp32 (docs/cuda.md), as autocast. GPT-2 here is Hugging Face's GPT2LMHeadModel math with
scaled_dot_product_attention (what transformers uses on a GPU); BERT-base has no aotc example yet.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DIR = os.path.join(ROOT, ".gpu-bench")

# name: (source, export flags, precisions, cases: (label, entry, {input: shape}))
MODELS = {
    "gemm": ("tools/bench/models/gemm.cpp", [], ("fp32", "tf32", "bf16", "fp16"),
             [("4096^3", "forward", {"a": (4096, 4096), "b": (4096, 4096)})]),
    "attention": ("tools/bench/models/attention.cpp", [], ("fp32", "bf16"),
                  [(f"b{b} h{h} seq {s} head {e}", "forward" if e == 64 else "wide",
                    {n: (b, h, s, e) for n in "qkv"})
                   for b, h, s, e in ((8, 12, 128, 64), (4, 12, 1024, 64), (2, 16, 2048, 128))]),
    "resnet50": ("examples/resnet/resnet50.cpp", ["--dyn", "batch=1..32"], ("fp32", "tf32", "bf16"),
                 [(f"b{b}", "forward", {"x": (b, 3, 224, 224)}) for b in (1, 32)]),
    "gpt2": ("examples/gpt2/gpt2.cpp", [], ("fp32", "bf16"),
             [(f"seq 128 b{b}", "forward", {"input_ids": (b, 128)}) for b in (1, 8)] +
             [(f"decode past 127 b{b}", "decode",
               {"input_ids": (b, 1), "past": (12, 2, b, 12, 127, 64)}) for b in (1, 8)]),
}
GROUPS = {"gemm": ("gemm", "attention"), "models": ("resnet50", "gpt2")}


def sh(cmd, **kw):
    return subprocess.run(cmd, check=True, capture_output=True, text=True, **kw).stdout


def prepare(args):
    build = os.path.join(ROOT, args.build)
    sh(["cmake", "--build", build, "--target", "aotc", "run_model"])
    os.makedirs(os.path.join(DIR, "bin"), exist_ok=True)
    run_model = os.path.join(DIR, "bin", "run_model")
    sh(["cp", os.path.join(build, "examples", "run_model", "run_model"), run_model])
    aotc = os.path.join(build, "tools", "aotc", "aotc")
    manifest_path = os.path.join(DIR, "manifest.json")
    manifest = {}
    if os.path.exists(manifest_path):
        with open(manifest_path) as f:
            manifest = json.load(f)
    for group in args.only.split(","):
        for model in GROUPS[group]:
            source, flags, precisions, _ = MODELS[model]
            os.makedirs(os.path.join(DIR, group), exist_ok=True)
            for precision in precisions:
                name = f"{model}_{precision}"
                so = os.path.join(DIR, group, name + ".so")
                print(f"gpu_bench: exporting {name}", file=sys.stderr)
                start = time.monotonic()
                sh([aotc, "export", os.path.join(ROOT, source), *flags, "--target", "cuda",
                    "--cuda-arch", args.cuda_arch, "--precision", precision,
                    "--weights-file", "external", "-o", so])
                seconds = time.monotonic() - start
                weights = so[:-3] + ".weights"
                manifest[name] = {"so": os.path.relpath(so, DIR), "model": model,
                                  "precision": precision, "weights_bytes": os.path.getsize(weights),
                                  "export_s": round(seconds, 2)}
                os.remove(weights)
    with open(manifest_path, "w") as f:
        json.dump(manifest, f, indent=1, sort_keys=True)
    total = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(DIR) for f in fs)
    print(f"gpu_bench: prepared {DIR} ({total / 2**20:.1f} MiB)")


# ---------------------------------------------------------------------------------------------
# The GPU side.


def torch_gpt2(torch):
    F = torch.nn.functional

    class GPT2(torch.nn.Module):
        """GPT-2 small as transformers computes it on a GPU (sdpa attention)."""

        def __init__(self, layers=12, embd=768, heads=12, vocab=50257, positions=1024):
            super().__init__()
            self.heads = heads
            self.wte = torch.nn.Embedding(vocab, embd)
            self.wpe = torch.nn.Embedding(positions, embd)
            self.blocks = torch.nn.ModuleList(torch.nn.ModuleDict({
                "ln_1": torch.nn.LayerNorm(embd), "c_attn": torch.nn.Linear(embd, 3 * embd),
                "c_proj": torch.nn.Linear(embd, embd), "ln_2": torch.nn.LayerNorm(embd),
                "c_fc": torch.nn.Linear(embd, 4 * embd),
                "mlp_proj": torch.nn.Linear(4 * embd, embd)}) for _ in range(layers))
            self.ln_f = torch.nn.LayerNorm(embd)

        def forward(self, ids, past=None):
            b, t = ids.shape
            start = 0 if past is None else past.shape[4]
            pos = torch.arange(start, start + t, device=ids.device).unsqueeze(0)
            h = self.wte(ids) + self.wpe(pos)
            present = []
            for i, blk in enumerate(self.blocks):
                q, k, v = blk["c_attn"](blk["ln_1"](h)).split(h.shape[-1], dim=-1)
                q, k, v = (z.view(b, t, self.heads, -1).transpose(1, 2) for z in (q, k, v))
                if past is not None:
                    k = torch.cat([past[i, 0].to(k.dtype), k], 2)
                    v = torch.cat([past[i, 1].to(v.dtype), v], 2)
                    present.append(torch.stack([k, v]))
                y = F.scaled_dot_product_attention(q, k, v, is_causal=past is None)
                h = h + blk["c_proj"](y.transpose(1, 2).reshape(b, t, -1))
                h = h + blk["mlp_proj"](F.gelu(blk["c_fc"](blk["ln_2"](h)), approximate="tanh"))
            logits = self.ln_f(h) @ self.wte.weight.t()
            return (logits, torch.stack(present)) if past is not None else logits

    return GPT2()


def torch_module(torch, model):
    if model == "gemm":
        class Gemm(torch.nn.Module):
            def forward(self, a, b):
                return torch.mm(a, b)

        return Gemm()
    if model == "attention":
        class Attention(torch.nn.Module):
            def forward(self, q, k, v):
                return torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)

        return Attention()
    if model == "resnet50":
        import torchvision
        return torchvision.models.resnet50()
    return torch_gpt2(torch)


def torch_inputs(torch, model, precision, shapes, device):
    out = []
    for name, shape in shapes.items():
        if name == "input_ids":
            out.append(torch.randint(0, 50257, shape, device=device))
        elif model in ("gemm", "attention") and precision in ("bf16", "fp16"):
            dtype = torch.bfloat16 if precision == "bf16" else torch.float16
            out.append(torch.randn(shape, device=device, dtype=dtype))
        else:
            out.append(torch.randn(shape, device=device))
    return out


def set_precision(torch, precision):
    tf32 = precision == "tf32"
    torch.backends.cuda.matmul.allow_tf32 = tf32
    torch.backends.cudnn.allow_tf32 = tf32


def autocast(torch, model, precision):
    import contextlib
    if model in ("gemm", "attention") or precision not in ("bf16", "fp16"):
        return contextlib.nullcontext()
    dtype = torch.bfloat16 if precision == "bf16" else torch.float16
    return torch.autocast(device_type="cuda", dtype=dtype)


def torch_sample(torch, fn, inputs, iters, cast):
    times = []
    with torch.inference_mode(), cast:
        for _ in range(iters):
            start = time.perf_counter()
            fn(*inputs)
            torch.cuda.synchronize()
            times.append((time.perf_counter() - start) * 1e3)
    return statistics.median(times)


def aotc_sample(run_model, so, weights, entry, shapes, iters, graphs):
    cmd = [run_model, so, "--device", "cuda", "--entry", entry, "--iters", str(iters),
           "--median-only"]
    if weights:
        cmd += ["--weights", weights, "--map-weights-unchecked"]
    for name, shape in shapes.items():
        cmd += ["--input", f"{name}={'x'.join(map(str, shape))}"]
    if graphs:
        cmd.append("--cuda-graphs")
    return float(sh(cmd).split()[0])


def fmt(values):
    m = statistics.median(values)
    digits = 3 if m < 1 else 2 if m < 10 else 1
    return f"{m:.{digits}f} [{min(values):.{digits}f}-{max(values):.{digits}f}]"


def run(args):
    import torch
    if not torch.cuda.is_available():
        print("gpu_bench: PyTorch finds no CUDA device: the GPU benchmark did not run")
        return 0
    t0 = time.monotonic()
    with open(os.path.join(DIR, "manifest.json")) as f:
        manifest = json.load(f)
    run_model = os.path.join(DIR, "bin", "run_model")
    print(f"gpu_bench: {torch.cuda.get_device_name()}, PyTorch {torch.__version__}, "
          f"CUDA {torch.version.cuda}; {args.repeats} interleaved rounds, {args.iters} calls a sample")
    peers = [p for p in args.peers.split(",") if p]
    rows = []
    weights_files = {}
    for name, item in sorted(manifest.items(), key=lambda kv: (kv[1]["model"] != "gemm", kv[0])):
        so = os.path.join(DIR, item["so"])
        if not os.path.exists(so):
            continue
        model, precision = item["model"], item["precision"]
        size = item["weights_bytes"]
        if size == 0:
            weights_files[size] = None
        elif size not in weights_files:
            path = f"/tmp/gpu_bench_{size}.weights"
            gen = torch.Generator().manual_seed(size)
            blob = (torch.randn(size // 4, generator=gen) * 0.02).numpy().tobytes()
            with open(path, "wb") as f:
                f.write(blob + bytes(size - len(blob)))
            weights_files[size] = path
        weights = weights_files[size]
        set_precision(torch, precision)
        module = torch_module(torch, model).cuda().eval()
        for label, entry, shapes in MODELS[model][3]:
            if model == "gemm" and precision in ("bf16", "fp16"):
                entry = f"mm_{precision}"  # bf16 / fp16 tensors, as torch.mm's
            inputs = torch_inputs(torch, model, precision, shapes, "cuda")
            cast = autocast(torch, model, precision)
            sides = {"aotc": lambda: aotc_sample(run_model, so, weights, entry, shapes,
                                                 args.iters, False),
                     "aotc graphs": lambda: aotc_sample(run_model, so, weights, entry, shapes,
                                                        args.iters, True)}
            fns = {"eager": module}
            for peer in peers:
                if peer == "eager":
                    continue
                if time.monotonic() - t0 > args.deadline:
                    print(f"gpu_bench: {name} {label}: {peer} skipped (past --deadline)")
                    continue
                try:
                    start = time.monotonic()
                    # torch.export traces under no_grad (inference tensors are not exportable
                    # everywhere); the compiled modules run under inference_mode as eager does.
                    grad_off = torch.no_grad() if peer == "aoti" else torch.inference_mode()
                    with grad_off, cast:
                        if peer == "compile":
                            for mode in ("max-autotune-no-cudagraphs", "reduce-overhead"):
                                fn = torch.compile(module, mode=mode)
                                for _ in range(3):
                                    fn(*inputs)
                                fns[f"compile {mode}"] = fn
                        elif peer == "aoti":
                            ep = torch.export.export(module, tuple(inputs))
                            pkg = torch._inductor.aoti_compile_and_package(
                                ep, package_path=f"/tmp/gpu_bench_{name}_{entry}.pt2")
                            fns["AOTInductor"] = torch._inductor.aoti_load_package(pkg)
                    torch.cuda.synchronize()
                    print(f"gpu_bench: {name} {label}: {peer} compiled in "
                          f"{time.monotonic() - start:.1f} s")
                except Exception as e:  # a peer that cannot compile this model is reported
                    print(f"gpu_bench: {name} {label}: {peer} failed: {str(e).splitlines()[0]}")
            for fn in fns.values():  # warm up: cuDNN/cuBLAS heuristics, autotuning
                torch_sample(torch, fn, inputs, 3, autocast(torch, model, precision))
            samples = {k: [] for k in [*sides, *fns]}
            for _ in range(args.repeats):
                for k, side in list(sides.items()):
                    try:
                        samples[k].append(side())
                    except subprocess.CalledProcessError as e:
                        print(f"gpu_bench: {name} {label}: {k} failed: {e.stderr.strip()}")
                        del sides[k]
                        samples[k].append(float("nan"))
                for k, fn in fns.items():
                    samples[k].append(torch_sample(torch, fn, inputs, args.iters,
                                                   autocast(torch, model, precision)))
            rows.append((name, label, samples))
            line = "  ".join(f"{k} {fmt(v)}" for k, v in samples.items())
            print(f"{name:14} {label:22} {line}", flush=True)
            del inputs
        del module
        torch.cuda.empty_cache()

    print("\n| model | case | " + " | ".join(["aotc", "aotc graphs", "peers (ms)", "aotc/peer"])
          + " |\n|---|---|---|---|---|---|")
    for name, label, samples in rows:
        a = min(statistics.median(samples["aotc"]), statistics.median(samples["aotc graphs"]))
        peers_ms = {k: statistics.median(v) for k, v in samples.items() if not k.startswith("aotc")}
        extra = ""
        if name.startswith("gemm"):
            extra = f" ({2 * 4096**3 / a / 1e9:.0f} TFLOPS)"
        if name.startswith("attention"):  # causal: half of QK^T and of P.V
            b, h, s, e = {c[0]: c[2]["q"] for c in MODELS["attention"][3]}[label]
            extra = f" ({2 * b * h * s * s * e / a / 1e9:.0f} TFLOPS)"
        print(f"| {name} | {label} | {fmt(samples['aotc'])}{extra} | {fmt(samples['aotc graphs'])} | "
              + ", ".join(f"{k} {v:.3g}" for k, v in peers_ms.items()) + " | "
              + ", ".join(f"{a / v:.2f}" for v in peers_ms.values()) + " |")

    # Start-up: a fresh process that loads the ResNet-50 artifact and runs it once.
    if "resnet50_fp32" in manifest and os.path.exists(os.path.join(DIR, manifest["resnet50_fp32"]["so"])):
        item = manifest["resnet50_fp32"]
        times = []
        for _ in range(args.repeats):
            start = time.monotonic()
            sh([run_model, os.path.join(DIR, item["so"]), "--device", "cuda", "--weights",
                weights_files[item["weights_bytes"]], "--map-weights-unchecked", "--iters", "0",
                "--entry", "forward", "--input", "x=1x3x224x224"])
            times.append((time.monotonic() - start) * 1e3)
        print(f"\nstart-up, ResNet-50 b1 fresh process (load with the weights file mapped + first "
              f"inference): {fmt(times)} ms; export took {item['export_s']} s on the build machine")
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="command", required=True)
    pp = sub.add_parser("prepare")
    pp.add_argument("--build", default="build")
    pp.add_argument("--cuda-arch", default="sm_90")
    pp.add_argument("--only", default="gemm,models")
    pr = sub.add_parser("run")
    pr.add_argument("--repeats", type=int, default=3)
    pr.add_argument("--iters", type=int, default=20)
    pr.add_argument("--peers", default="eager")
    pr.add_argument("--deadline", type=float, default=400)
    args = p.parse_args()
    if args.command == "prepare":
        for g in args.only.split(","):
            if g not in GROUPS:
                p.error(f"--only {g}: expected gemm or models")
        return prepare(args)
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
