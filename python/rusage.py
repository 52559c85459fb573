"""Runs a command and prints what it used, as JSON on the last line of stderr (bench/real.ts reads it):

    python rusage.py <command> [args...]

`cpu_s`: user + system CPU seconds of the command and every process it waited for (getrusage's
RUSAGE_CHILDREN), `peak_rss_mb`: the largest resident set of any of them, `wall_s`, `code`: its exit code.
The command's own output passes through. Python's resource module is the portable way to read a child's
rusage (Node exposes only its own); the benchmark runs Tagger, scikit-learn and fastText through it alike.
"""
import json
import resource
import subprocess
import sys
import time


def main():
    started = time.perf_counter()
    code = subprocess.call(sys.argv[1:])
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    report = {
        "cpu_s": usage.ru_utime + usage.ru_stime,
        "peak_rss_mb": usage.ru_maxrss / 1024,
        "wall_s": time.perf_counter() - started,
        "code": code,
    }
    sys.stderr.write(f"\nRUSAGE {json.dumps(report)}\n")
    sys.exit(code)


if __name__ == "__main__":
    main()
