# lit configuration for needlec's tool-level tests (error messages, determinism, the oracle).
import os

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
config.substitutions.append(("%cxx", "c++ -std=c++17 -O2 -Wall -Wextra -Werror"))
config.substitutions.append(("%cc", "cc -std=c11 -O2 -Wall -Wextra -Werror"))
config.substitutions.append(("%e2e", os.path.join(config.needle_source_dir, "test", "e2e")))
config.substitutions.append(("%needle_tools", config.needle_tools_dir))
config.substitutions.append(
    ("%compare", f"{config.python_executable} {oracle_dir}/compare.py {config.needle_tools_dir}/needle-run"))
config.substitutions.append(("%oracle", f"{config.python_executable} {oracle_dir}/needle_oracle.py"))
