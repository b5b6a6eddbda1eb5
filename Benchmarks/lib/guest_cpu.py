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

    With FIELDCAP_BENCH_CPU set (a CPU list for taskset, e.g. "1"), every tool runs on those
    CPUs alone: under emulation, how a multi-threaded recorder's threads land on the guest's
    virtual CPUs moves its CPU time by up to 2x from run to run.
    """
    cpus = os.environ.get("FIELDCAP_BENCH_CPU")
    if cpus:
        args = ["taskset", "-c", cpus] + list(args)
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


def local_copy(binary, directory):
    """Copies `binary` into `directory` (the guest's tmpfs) and returns the copy's path.

    The rig's guest sees the host's files through 9p and keeps none of their pages between runs:
    each run of fieldcap's 78 MB binary read the pages it touched from the host again, about a
    sixth of a short recording's CPU. A rig runs its binary from local storage.
    """
    import shutil
    copy = os.path.join(directory, os.path.basename(binary) + "-local")
    shutil.copy2(binary, copy)
    return copy


def warm_up_memory(directory, megabytes):
    """Writes and deletes `megabytes` of zeros in `directory` (the guest's tmpfs).

    Under QEMU's software emulation, the first time the guest touches a page of its RAM, the host
    faults it in, and the guest charges that time to whatever it was running: the first recorder
    of a freshly booted guest paid for it, the others did not. A real machine has no such cost.
    """
    path = os.path.join(directory, "warm-up.bin")
    subprocess.run(["dd", "if=/dev/zero", f"of={path}", "bs=1M", f"count={megabytes}"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    os.unlink(path)


def median(values):
    ordered = sorted(values)
    middle = len(ordered) // 2
    return ordered[middle] if len(ordered) % 2 else (ordered[middle - 1] + ordered[middle]) / 2


def interleaved_rounds(tools, rounds):
    """Runs every tool once per round, the order rotated each round (so none is always first).

    `tools` is a list of (name, run) where run() returns (items, cpu_seconds, steady_per_item).
    Returns {name: [(items, cpu, steady), ...]} in round order.
    """
    results = {name: [] for name, _ in tools}
    for round_index in range(rounds):
        shift = round_index % len(tools)
        for name, run in tools[shift:] + tools[:shift]:
            results[name].append(run())
            print(f"round {round_index + 1}/{rounds}: {name}: {results[name][-1][0]} items, "
                  f"{results[name][-1][1]:.2f} s CPU", flush=True)
    return results


def table_rows(results, unit_scale, unit):
    """Markdown rows: median CPU per item over the rounds (and the rounds' range), whole run and
    steady state, each also as a ratio to the first tool's median."""
    names = list(results)
    def per_item(name):
        return [cpu / max(1, items) for items, cpu, _ in results[name]]
    def steady(name):
        return [s for _, _, s in results[name] if s is not None]
    base_whole, base_steady = median(per_item(names[0])), median(steady(names[0]) or [0]) or None
    rows = []
    for name in names:
        whole, st = per_item(name), steady(name)
        items = median([i for i, _, _ in results[name]])
        cells = [name, f"{items:g}", f"{median(whole) * unit_scale:.2f} {unit} ({min(whole) * unit_scale:.2f}–{max(whole) * unit_scale:.2f})",
                 f"{median(whole) / base_whole:.2f}x"]
        if st and base_steady:
            cells += [f"{median(st) * unit_scale:.2f} {unit} ({min(st) * unit_scale:.2f}–{max(st) * unit_scale:.2f})",
                      f"{median(st) / base_steady:.2f}x"]
        else:
            cells += ["-", "-"]
        rows.append("| " + " | ".join(cells) + " |")
    return rows
