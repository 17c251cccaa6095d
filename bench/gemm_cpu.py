#!/usr/bin/python3
"""CPU matrix products shape by shape: OpenBLAS against the CPU backend's own AVX-512 kernel.

Runs BIN/bench_gemm_cpu (the shapes a training step makes, through the backend's table
on one thread) twice, with OpenBLAS pinned to its Haswell (AVX2) kernels and on its own
choice, and BIN/bench_fma_peak for the core's AVX2 and AVX-512 peaks. The own kernel
does not depend on OpenBLAS's setting; its rate is the pinned run's (the other run's is
in the JSON on stderr). Prints a Markdown table and writes docs/benchmarks/gemm-cpu.md,
headed by the CPU model and the load average (the machine is shared: ratios in one run
compare, absolute figures move between runs).

    scripts/build.sh release
    /usr/bin/python3 bench/gemm_cpu.py [--rounds 5] [--bin build/bin]
"""
import argparse
import datetime
import json
import os
import subprocess
import sys

from benchutil import ROOT, cpu_model, need, write_page


def run(cmd, coretype):
    env = dict(os.environ)
    for k in ("OPENBLAS_CORETYPE", "OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "TN_CPU_GEMM",
              "TN_CPU_NO_AVX512"):
        env.pop(k, None)
    if coretype:
        env["OPENBLAS_CORETYPE"] = coretype
    out = subprocess.run(cmd, env=env, capture_output=True, text=True, check=True).stdout
    return [json.loads(line) for line in out.splitlines() if line.startswith("{")]


def loadavg():
    with open("/proc/loadavg") as f:
        return " ".join(f.read().split()[:3])


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rounds", type=int, default=5)
    p.add_argument("--bin", default=os.path.join(ROOT, "build", "bin"))
    p.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks", "gemm-cpu.md"))
    a = p.parse_args()
    bench, peak_bin = os.path.join(a.bin, "bench_gemm_cpu"), os.path.join(a.bin, "bench_fma_peak")
    need(bench, "gemm_cpu.py")
    need(peak_bin, "gemm_cpu.py")
    load_before = loadavg()
    peak = run([peak_bin, "--threads=1"], None)[0]
    pinned = run([bench, "--rounds=%d" % a.rounds], "Haswell")
    auto = run([bench, "--rounds=%d" % a.rounds], None)
    load_after = loadavg()
    print(json.dumps({"peak": peak, "pinned": pinned, "auto": auto}), file=sys.stderr)
    core_auto = auto[0]["core"]
    avx512 = peak.get("avx512_gflops")
    lines = [
        "| product | in the step | OpenBLAS Haswell (GFLOP/s) | OpenBLAS %s (GFLOP/s) | own AVX-512 (GFLOP/s) | own / Haswell | own / %s | own / AVX-512 peak |"
        % (core_auto, core_auto),
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for p_, q in zip(pinned[1:], auto[1:]):
        own = p_["own_gflops"]
        lines.append("| %s | %s | %.1f | %.1f | %s | %s | %s | %s |" % (
            p_["shape"], p_["use"], p_["openblas_gflops"], q["openblas_gflops"],
            "%.1f" % own if own else "—",
            "%.2fx" % (own / p_["openblas_gflops"]) if own else "—",
            "%.2fx" % (own / q["openblas_gflops"]) if own else "—",
            "%.0f%%" % (100.0 * own / avx512) if own and avx512 else "—"))
    table = "\n".join(lines)
    print(table)
    head = ("# CPU matrix products: OpenBLAS against the own AVX-512 kernel\n\n"
            "Written by `bench/gemm_cpu.py` on %s (%s, %d cores, load average %s before and "
            "%s after; %s). One thread, best of %d measurements of at least 0.1 s each. The "
            "core's FMA peak (`bench_fma_peak`): %s GFLOP/s in AVX2, %s in AVX-512.\n\n"
            % (datetime.date.today().isoformat(), cpu_model(), os.cpu_count(), load_before,
               load_after, " ".join(pinned[0]["blas"].split()[:2]), a.rounds,
               peak.get("avx2_gflops"), avx512))
    notes = """
*Product*: `NT 128x256x784` is c (128, 256) = a (128, 784) b^T, as `cblas_sgemm` takes
it row-major (N: as stored, T: transposed); each is made through the CPU backend's
table (`kn_cpu()->gemm`) on one thread, as a training step makes it, the maker picked
by `kn_cpu_gemm`. *OpenBLAS Haswell*: `OPENBLAS_CORETYPE=Haswell`, its AVX2 kernels;
the next column is OpenBLAS's own choice on this CPU. *Own AVX-512*:
`kernels/cpu_gemm.c`, which the backend takes by itself only where the OpenBLAS
kernels in use lack AVX-512 (`docs/trainer.md`, "Speed on the CPU"); "—" where the
CPU has no AVX-512. The Winograd products are one of the 16 a conv block makes per
chunk of four images (196 tiles of 2x2).
"""
    write_page(a.out, head + table + "\n" + notes)


if __name__ == "__main__":
    main()
