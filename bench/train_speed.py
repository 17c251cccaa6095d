#!/usr/bin/python3
"""Training-speed benchmark: `trainer`'s step against PyTorch and the GEMM floor.

For each OpenBLAS setting (OPENBLAS_CORETYPE=Haswell, i.e. AVX2 kernels, and
OpenBLAS's own choice), thread count (1, 2) and model (the 784-256-256-10 MLP and the
32,64/128 CNN), in the same run and interleaved:
  - ours:  BIN/bench_train, full training steps, data in memory;
  - floor: the same binary timing the same steps with every call but the matrix
           products skipped (the GEMM floor: the step's own products, same shapes,
           order, buffers and threads);
  - torch: bench/pytorch_train.py (Debian's python3-torch), same model, batch,
           optimiser (momentum 0.9, lr 0.05) and threads, data in memory; with two
           threads both OMP_WAIT_POLICY defaults and PASSIVE are run and the best kept;
  - cnn, im2col: bench_train --winograd=0 --direct=0, the conv blocks without Winograd
           or the direct convolution (im2col and one GEMM for every product, as before
           issue 14's Winograd), so the run also measures what those changed;
  - OpenBLAS products: the same with TN_CPU_GEMM=openblas, so that where the CPU
           backend's own AVX-512 kernel makes the products (an AVX-512 CPU with
           OpenBLAS's AVX2 kernels) the run also measures the step at PyTorch's BLAS;
  - cnn, separate calls: bench_train --unfused, the CNN with each conv block made of
           separate calls (im2col of the whole batch, one GEMM, bias, activation,
           pooling: the CPU's way before its conv blocks, and the CUDA backend's), so
           the run also measures what the conv blocks changed.
  - peak:  BIN/bench_fma_peak, the cores' FMA peak on 1 and 2 threads (AVX2 and, where
           the CPU has it, AVX-512), which no product can beat: a second table sets
           each floor's products against the peak of the vectors its products use
           (OpenBLAS's kernels', or the CPU backend's own AVX-512 kernel's).
Each measurement is repeated (--repeats) and the best kept, since this machine is
shared and noisy; the load average before and after the run is recorded. Prints a
Markdown table and writes it to docs/benchmarks/train-speed.md, where the previous
run's table moves under "Older runs", with the notes written by hand below the page's
HAND line on that run.

    scripts/install-deps.sh --bench && scripts/build.sh release
    /usr/bin/python3 bench/train_speed.py [--repeats 3] [--quick] [--bin build/bin]
"""
import argparse
import datetime
import json
import os
import re
import subprocess
import sys

from benchutil import ROOT, cpu_model, need, write_page
TORCH = os.path.join(ROOT, "bench", "pytorch_train.py")
OLDER = "## Older runs"
# Below this line of the page, notes written by hand on the run it shows; the next run
# keeps them, with that run's table, under OLDER.
HAND = ("<!-- Notes written by hand on this run go below this line: the next run of "
        "bench/train_speed.py moves them, with this run's table, under \"Older runs\". -->")

NOTES = """
*GEMM floor*: the same training steps with every kernel call but the matrix products
skipped (the conv blocks make only their products, the direct convolution's
multiply-adds included: `kn_cpu_gemm_only`) and no
optimiser update, so the products are the step's own, with the same shapes, order,
buffers and threads; a step cannot be faster than this with the same products. *ours /
floor* is the share of the step spent in those products: the rest is the batch
gather, the element-wise kernels, im2col/col2im or the Winograd transforms, pooling
and the optimiser update. The floor of *cnn, im2col* and of *cnn, separate calls* is
that path's own products (one GEMM per layer and chunk, or over the whole batch).
With Winograd the second conv layer's products are 2.25x fewer multiplications, so
the CNN's floor rises (by 65% to 80% on this machine) and its transforms join the
work outside the floor: *ours / floor* falls while the step gets faster; *ours /
PyTorch* and the comparison with *cnn, im2col* say what the step gained.

How to read it:

- The targets are ratios measured in one run (this machine is shared, and absolute
  figures move by 20% or more between runs): at least 1.3x PyTorch for both models at
  one and two threads, OpenBLAS pinned and on its own choice; the MLP at least 85% of
  its floor on one thread pinned; the CNN at least 80% of its floor on one thread and
  65% on two.
- PyTorch runs with its best setting: with two threads libgomp's spinning threads fight
  OpenBLAS's pthreads unless `OMP_WAIT_POLICY=PASSIVE` is set; both are tried and the
  faster kept. Debian's PyTorch uses OpenBLAS for `nn.Linear` and oneDNN for
  convolutions (oneDNN picks its own kernels for the CPU whatever OpenBLAS is set to).
- *OpenBLAS auto* leaves `OPENBLAS_CORETYPE` unset, so OpenBLAS picks the kernels for
  the CPU it finds; *Haswell* pins the AVX2 kernels.
- *Products by*: who made the step's matrix products. Where the CPU has AVX-512 and
  the OpenBLAS kernels in use do not (*Haswell* rows on an AVX-512 CPU, or an OpenBLAS
  that does not know the CPU), the CPU backend makes them with its own AVX-512 kernel
  (`kernels/cpu_gemm.c`: packed panels, 8 x 32 tiles of the result in registers), at
  about twice OpenBLAS's AVX2 speed; elsewhere OpenBLAS does (`kn_cpu_gemm`'s rule,
  `TN_CPU_GEMM=openblas|avx512` to force one). PyTorch's `nn.Linear` keeps OpenBLAS's
  kernels, so in those rows the two steps' products differ too. The rows *..., OpenBLAS
  products* are the same binary with `TN_CPU_GEMM=openblas`: the step against PyTorch
  at the same BLAS. Where OpenBLAS has AVX-512 kernels of its own, the two rows make
  the same products.
- Why the MLP step beats PyTorch at the same BLAS: no autograd graph or allocation per
  step (every buffer is allocated once), the bias is folded into the GEMM's `beta`,
  the first layer's input gradient is never computed, and the optimiser is one fused
  loop over all parameters.
- Why the CNN does: each conv block (conv 3x3, bias, ReLU, 2x2 max-pool) is one call
  of the CPU backend (`kernels/cpu_conv.c`) that works a few images at a time, so the
  im2col matrix and the conv output of a chunk stay in the core's cache between
  im2col, the GEMM and the pooling, and keeps only the pooled activations; its
  backward pass recomputes a chunk's im2col instead of keeping the batch's. Blocks of
  16 input channels or more (the second) make their three products (z, dx, dW) by
  Winograd F(2x2,3x3) instead: 16 GEMMs over a chunk's 4x4 input tiles in transform
  space, 2.25x fewer multiplications than im2col's; dx runs the forward pass's steps
  backwards (the products take the gradient's tiles that dW takes, and one adjoint
  transform over the input channels adds each tile back into dx), so dz's own tiles are
  never made. The first block (one input channel) makes its forward pass by the direct
  convolution instead, each window's four outputs summed tap by tap in registers and
  pooled there (no im2col, no conv output), and with AVX-512 its weight gradient too;
  its multiply-adds are its products, in the floor as im2col's GEMM was. Where the CPU
  has AVX-512, Winograd's input and adjoint transforms and the fused pooling and
  unpooling take it too, whatever OpenBLAS is set to (the same bits as their AVX2
  forms; they are outside the floor). The batch is
  cut into 16 groups
  that the backend's own threads take in turn, each running single-threaded GEMMs on
  its chunks, so im2col, col2im, the transforms and pooling run on both cores too and
  the threads never wait on each other inside a layer. *cnn, separate calls*
  is the same binary without the conv blocks.
- Threads: the backend's own are the only ones. OpenBLAS is kept to one thread; with
  two, the dense layers' products are split in two along the longer side of their
  result and the optimiser update in two halves, on the same threads as the conv
  blocks. (OpenBLAS's own threads spin between products and then compete with the conv
  code's for the two cores.)
"""


PEAK_HEAD = "## The products against the FMA peak"
PEAK_NOTES = """
*GFLOP a step*: what the step's products compute, 2mnk for each (counted by the CPU
backend as they are made: `kn_cpu_gemm_flops`); Winograd's products are fewer than
im2col's, so the CNN rows differ. *products*: that work over the GEMM floor's time.
*FMA peak*: `bench/bench_fma_peak`, independent fused multiply-adds in registers on as
many threads, with the vectors that row's products use (AVX2 for OpenBLAS's Haswell
kernels; AVX-512 for the own kernel, and where OpenBLAS's own choice takes its
SkylakeX, Cooperlake or Sapphire Rapids kernels). No product can beat it, so *products / peak* is how much faster the floor
could get at all, and *ours / peak* the whole step's rate against it. *1.3x PyTorch
needs*: the share of the peak a step must reach to run 1.3x PyTorch's examples a
second, for the MLP only, whose products PyTorch makes too (the same shapes; PyTorch's
convolutions make other products than ours). Where that is near or above *products /
peak*, no code outside the products can get the step there. (The CNN's first layer,
7% of its work, is our own direct convolution, which takes AVX-512 where the CPU has it
even with OpenBLAS pinned to Haswell: its rows with OpenBLAS's Haswell products set a
little AVX-512 work against the AVX2 peak. The Winograd transforms' AVX-512 forms make no products, so they change
the step's rate, not the floor's.)
"""


def avx512_kernels(blas):
    """Whether the OpenBLAS config string blas names AVX-512 kernels (its core name
    before MAX_THREADS: SkylakeX, Cooperlake, SapphireRapids)."""
    words = blas.split()
    core = next((words[i - 1] for i, w in enumerate(words) if w.startswith("MAX_THREADS") and i),
                words[-1] if words else "")
    return core.lower() in ("skylakex", "cooperlake", "sapphirerapids")


def peak_lines(rows):
    """The second table: each row's products against the FMA peak."""
    lines = [
        "| OpenBLAS | threads | model | products by | GFLOP a step | products (GFLOP/s) | FMA peak (GFLOP/s) | products / peak | ours / peak | 1.3x PyTorch needs |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        rate = lambda ex: ex / r["batch"] * r["gflop"]  # GFLOP/s at ex examples a second
        peak = r["peak"]
        if not peak:
            continue
        needs = ("%.0f%%" % (100.0 * 1.3 * rate(r["torch"]) / peak)
                 if r["model"].startswith("mlp") else "—")
        lines.append("| %s | %d | %s | %s | %.3f | %.1f | %.1f (%s) | %.0f%% | %.0f%% | %s |" % (
            r["openblas"], r["threads"], r["model"], r["gemm"], r["gflop"], rate(r["floor"]), peak,
            r["isa"], 100.0 * rate(r["floor"]) / peak, 100.0 * rate(r["ours"]) / peak, needs))
    return "\n".join(lines)


def run_json(cmd, env_extra):
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OMP_WAIT_POLICY", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS",
              "TN_CPU_GEMM", "TN_CPU_NO_AVX512"):
        env.pop(k, None)
    env.update({k: v for k, v in env_extra.items() if v is not None})
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def older_runs(path):
    """The sections to keep under "Older runs" of the page at path: the run it shows
    until now (its table, then the notes written by hand below HAND, their headings a
    level down), then the older ones it keeps ([] when there is no page)."""
    if not os.path.exists(path):
        return []
    with open(path) as f:
        current, _, older = f.read().partition(OLDER)
    sections = []
    m = re.search(r"^Written by `bench/train_speed.py` on (.*?)\. Best of", current, re.M)
    t = re.search(r"^\| OpenBLAS \|.*?(?=\n\n|\Z)", current, re.M | re.S)
    if m and t:
        hand = current.partition(HAND)[2].strip()
        hand = re.sub(r"^(#+) ", r"\1# ", hand, flags=re.M)
        pk = re.search(r"^\| OpenBLAS \| threads \| model \| GFLOP a step \|.*?(?=\n\n|\Z)",
                       current, re.M | re.S)
        sections.append("### %s\n\n%s%s%s" % (m.group(1), t.group(0).strip(),
                                                "\n\n" + pk.group(0).strip() if pk else "",
                                                "\n\n" + hand if hand else ""))
    i = older.find("\n### ")
    if i >= 0:
        sections.append(older[i + 1:].strip())
    return sections


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--quick", action="store_true", help="fewer steps (a smoke run)")
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"),
                   help="where bench_train is (default build/bin)")
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "train-speed.md"))
    a = p.parse_args()
    bench = os.path.join(a.bin, "bench_train")
    need(bench, "train_speed.py")
    peak_bin = os.path.join(a.bin, "bench_fma_peak")
    need(peak_bin, "train_speed.py")
    peaks = {t: run_json([peak_bin, "--threads=%d" % t], {}) for t in (1, 2)}
    steps = {"mlp": 100 if a.quick else 600, "cnn": 5 if a.quick else 30}
    load_before = loadavg()
    rows = []
    blas = "?"
    torch_version = "?"
    for coretype in ("Haswell", None):
        for threads in (1, 2):
            for model in ("mlp", "cnn"):
                env = {"OPENBLAS_CORETYPE": coretype}
                # (label, flags, environment) of each row of this model and setting
                gemm_openblas = {"TN_CPU_GEMM": "openblas"}
                variants = ([(model, [], {}), (model + ", OpenBLAS products", [], gemm_openblas)]
                            + ([] if model == "mlp" else
                               [("cnn, im2col", ["--winograd=0", "--direct=0"], {}),
                                ("cnn, separate calls", ["--unfused"], {})]))
                ours = [None] * len(variants)
                floor = [0.0] * len(variants)
                torch, torch_best_env = None, ""
                for _ in range(a.repeats):
                    for v, (_, extra, extra_env) in enumerate(variants):
                        r = run_json([bench, "--model=%s" % model, "--threads=%d" % threads,
                                      "--steps=%d" % steps[model]] + extra, dict(env, **extra_env))
                        blas = r.get("blas", blas)
                        if ours[v] is None or r["examples_per_sec"] > ours[v]["examples_per_sec"]:
                            ours[v] = r
                        floor[v] = max(floor[v], r["gemm_floor_examples_per_sec"])
                    policies = [None] if threads == 1 else [None, "PASSIVE"]
                    for pol in policies:
                        t = run_json(["/usr/bin/python3", TORCH, "--model", model, "--threads",
                                      str(threads), "--steps", str(steps[model]),
                                      "--data", "fashion"], dict(env, OMP_WAIT_POLICY=pol))
                        torch_version = t.get("version", torch_version)
                        if torch is None or t["examples_per_sec"] > torch["examples_per_sec"]:
                            torch = t
                            torch_best_env = "OMP_WAIT_POLICY=PASSIVE" if pol else "default"
                for v in range(len(variants)):
                    isa = ("AVX-512" if ours[v].get("gemm") == "avx512"
                           or avx512_kernels(ours[v].get("blas", "")) else "AVX2")
                    row = {
                        "openblas": "Haswell (AVX2)" if coretype else "auto",
                        "threads": threads,
                        "model": variants[v][0],
                        "gemm": "own AVX-512" if ours[v].get("gemm") == "avx512" else "OpenBLAS",
                        "ours": ours[v]["examples_per_sec"], "floor": floor[v],
                        "torch": torch["examples_per_sec"], "torch_env": torch_best_env,
                        "batch": ours[v]["batch_size"], "gflop": ours[v]["gflop_per_step"],
                        "isa": isa,
                        "peak": peaks[threads]["avx512_gflops" if isa == "AVX-512" else "avx2_gflops"],
                    }
                    rows.append(row)
                    print(json.dumps(row), file=sys.stderr, flush=True)
    load_after = loadavg()
    lines = [
        "| OpenBLAS | threads | model | products by | ours (ex/s) | PyTorch (ex/s) | ours / PyTorch | GEMM floor (ex/s) | ours / floor | PyTorch setting |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for r in rows:
        lines.append("| %s | %d | %s | %s | %.0f | %.0f | %.2fx | %.0f | %.0f%% | %s |" % (
            r["openblas"], r["threads"], r["model"], r["gemm"], r["ours"], r["torch"],
            r["ours"] / r["torch"], r["floor"], 100.0 * r["ours"] / r["floor"], r["torch_env"]))
    table = "\n".join(lines)
    print(table)
    peak_table = peak_lines(rows)
    print("\n" + peak_table)
    older = older_runs(a.out)
    page = []
    page.append("# Training speed: trainer vs PyTorch vs the GEMM floor\n\n")
    page.append("Written by `bench/train_speed.py` on %s (%s, %d cores, load average %s before "
                "and %s after, %sPyTorch %s, %s). Best of %d "
                "runs each; batch 128, momentum SGD, data in memory. MLP 784-256-256-10; "
                "CNN conv 3x3 32 + pool, conv 3x3 64 + pool, dense 128, dense 10.\n\n"
                % (datetime.date.today().isoformat(), cpu_model(), os.cpu_count(), load_before,
                   load_after, "quick run, " if a.quick else "", torch_version,
                   " ".join(blas.split()[:2]), a.repeats))
    page.append(table + "\n")
    page.append(NOTES)
    page.append("\n%s\n\n%s\n%s" % (PEAK_HEAD, peak_table, PEAK_NOTES))
    page.append("\n%s\n" % HAND)
    if older:
        page.append("\n%s\n\nEarlier runs of this benchmark, each on its day's machine and "
                    "code.\n\n%s\n" % (OLDER, "\n\n".join(older)))
    write_page(a.out, "".join(page))


if __name__ == "__main__":
    main()
