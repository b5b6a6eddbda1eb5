"""CPU time of a program run in the kernel test rig's guest, whole and in steady state.

Shared by the benchmarks that compare fieldcap with a peer tool (v4l2-vs-peers, iio-vs-peers).
"""
import os, resource, subprocess, time


def process_cpu(pid):
    """The process's user + system CPU time so far, in seconds (all its threads, dead ones too)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def run_measured(name, args, seconds, items_per_second, stdout=subprocess.DEVNULL):
    """Runs `args` to the end. Returns (CPU seconds in all, steady-state CPU seconds per item).

    Steady state is from 5 s in to 2 s before the end: start-up (loading libraries, opening the
    device, allocating buffers) and shutdown left out; the device delivers `items_per_second`
    throughout. It is None for runs shorter than 12 s.
    """
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    process = subprocess.Popen(args, stdout=stdout, stderr=subprocess.DEVNULL)
    steady = None
    if seconds >= 12:
        time.sleep(5)
        cpu0, t0 = process_cpu(process.pid), time.monotonic()
        time.sleep(seconds - 7)
        cpu1, t1 = process_cpu(process.pid), time.monotonic()
        steady = (cpu1 - cpu0) / ((t1 - t0) * items_per_second)
    if process.wait() != 0:
        raise SystemExit(f"{name} failed")
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime), steady
