"""What the end-to-end drivers (check_backend.py, check_text.py, check_calls.py) share: running a
command, and building a program on a tiny model with a real tokenizer."""
import os
import shlex
import shutil
import subprocess
import sys


def run(*command, **kw):
    """Runs `command` and returns its stdout; exits with its output when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"FAILED: {shlex.join(command)}\n{result.stdout}{result.stderr}")
    return result.stdout


def add_build_options(parser):
    """The options that say how build_with_tokenizer builds and runs a program for a target."""
    parser.add_argument("--emit", choices=["cpp", "obj"], default="obj")
    parser.add_argument("--target", default="host", help="with --emit obj: needlec's --target")
    parser.add_argument("--cc", default="cc -std=c11 -O1 -Wall -Wextra -Werror",
                        help="the C compiler that builds and links")
    parser.add_argument("--cxx", default="c++ -std=c++17 -O1 -Wall -Wextra -Werror",
                        help="with --emit cpp: builds the model")
    parser.add_argument("--ld", help="links the program (default: --cc; with --emit cpp, c++)")
    parser.add_argument("--run", default="", help="a command prefix that runs the program (qemu-aarch64 -L ...)")
    parser.add_argument("--tokenizer-tables", default="fast", help="needlec's --tokenizer-tables")


def build_with_tokenizer(args, tokenizer_dir, vocab_size, base, mains, needlec_flags=(), synth_flags=(),
                         config_file=None):
    """Synthesizes a tiny model of `vocab_size` ids with TOKENIZER_DIR's tokenizer.json (and
    `config_file` as its tokenizer_config.json, when given), compiles it at depth 2 and builds
    `mains` with it (build_programs); returns the commands that run the programs, in order."""
    model = os.path.join(os.path.dirname(base), "m")
    run(os.path.join(args.tools, "needle-synth"), "--preset", "tiny", "--seed", "1", "--set", f"vocab_size={vocab_size}",
        *synth_flags, "--tokenizer", "none", "-o", model)
    shutil.copy(os.path.join(tokenizer_dir, "tokenizer.json"), model)
    if config_file:
        shutil.copy(config_file, os.path.join(model, "tokenizer_config.json"))
    return build_programs(args, model, base, mains,
                          ["--layers", "2", "--tokenizer-tables", args.tokenizer_tables, *needlec_flags])


def build_programs(args, model, base, mains, needlec_flags=()):
    """Compiles MODEL (needlec --emit obj for args.target, or --emit cpp built by args.cxx) to BASE.o
    and BASE.h, builds each C file of `mains` with args.cc and links it with the model; returns the
    commands that run the programs, in order."""
    needlec = [os.path.join(args.tools, "needlec"), model, *needlec_flags, "-o", base]
    cc = shlex.split(args.cc)
    if args.emit == "cpp":
        run(*needlec, "--emit", "cpp")
        run(*shlex.split(args.cxx), "-c", base + ".cpp", "-o", base + ".o")
    else:
        run(*needlec, "--emit", "obj", "--target", args.target)
    header = os.path.basename(base) + ".h"
    link = shlex.split(args.ld) if args.ld else ["c++"] if args.emit == "cpp" else cc
    runners = []
    for main_c in mains:
        program = base + "-" + os.path.splitext(os.path.basename(main_c))[0]
        run(*cc, "-DNEEDLE_NAME=needle_model", f'-DNEEDLE_HEADER="{header}"', "-I", os.path.dirname(base), "-c",
            main_c, "-o", program + ".o")
        run(*link, program + ".o", base + ".o", "-lm", "-o", program)
        runners.append(shlex.split(args.run) + [program])
    return runners
