"""What the end-to-end drivers (check_backend.py, check_text.py) share: running a command."""
import shlex
import subprocess
import sys


def run(*command, **kw):
    """Runs `command` and returns its stdout; exits with its output when it fails."""
    result = subprocess.run(command, capture_output=True, text=True, **kw)
    if result.returncode != 0:
        sys.exit(f"FAILED: {shlex.join(command)}\n{result.stdout}{result.stderr}")
    return result.stdout
