#!/usr/bin/env python3
"""Per-thread CPU of a running process over a window, from /proc: which
threads are busy (a serial stage shows as one thread near 100%).

    threads.py PID SECONDS

Prints each thread's CPU% (user+system) over the window, busiest first,
then the totals per thread-name family (the name with its digits removed).
"""
import os
import re
import sys
import time

TICK = os.sysconf("SC_CLK_TCK")


def sample(pid):
    out = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            with open(f"/proc/{pid}/task/{tid}/stat") as f:
                stat = f.read()
        except OSError:
            continue
        name = stat[stat.index("(") + 1 : stat.rindex(")")]
        fields = stat[stat.rindex(")") + 2 :].split()
        # fields[11], fields[12]: utime, stime (the 14th and 15th of stat)
        out[tid] = (name, int(fields[11]) + int(fields[12]))
    return out


def main():
    pid, seconds = sys.argv[1], float(sys.argv[2])
    a = sample(pid)
    t0 = time.monotonic()
    time.sleep(seconds)
    b = sample(pid)
    wall = time.monotonic() - t0
    rows = []
    for tid, (name, ticks) in b.items():
        before = a.get(tid, (name, ticks if tid not in a else 0))[1] if tid in a else 0
        rows.append((100.0 * (ticks - before) / TICK / wall, tid, name))
    rows.sort(reverse=True)
    total = sum(r[0] for r in rows)
    print(f"# pid {pid}: {len(rows)} threads, {total:.0f}% CPU over {wall:.1f} s")
    for pct, tid, name in rows[:40]:
        if pct >= 0.5:
            print(f"{pct:7.1f}%  {tid:>8}  {name}")
    families = {}
    for pct, _, name in rows:
        key = re.sub(r"\d+", "#", name)
        n, p = families.get(key, (0, 0.0))
        families[key] = (n + 1, p + pct)
    print("# by family")
    for key, (n, p) in sorted(families.items(), key=lambda kv: -kv[1][1]):
        print(f"{p:7.1f}%  {n:4d} x {key}")


if __name__ == "__main__":
    main()
