"""Python sequence packers of the kind Python training stacks use, as the baseline for
bench/pack_vs_python.cc. Reads one token count per line from argv[1], packs into argv[2]
tokens per pack, and prints one JSON line per algorithm: packs, tokens and seconds (packing
only, reading excluded).

- ffd: first-fit decreasing with a linear scan over open packs (the common implementation).
- bfd_bisect: best-fit decreasing over a sorted list of remaining room with bisect (a faster
  pure-Python variant, for context).
Run with Debian's /usr/bin/python3.
"""
import bisect
import json
import sys
import time


def ffd(lengths, capacity):
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    room = []
    packs = []
    for i in order:
        n = lengths[i]
        for b, r in enumerate(room):
            if r >= n:
                room[b] = r - n
                packs[b].append(i)
                break
        else:
            room.append(capacity - n)
            packs.append([i])
    return packs


def bfd_bisect(lengths, capacity):
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    rooms = []  # sorted list of (room, pack id)
    packs = []
    for i in order:
        n = lengths[i]
        k = bisect.bisect_left(rooms, (n, -1))
        if k < len(rooms):
            r, b = rooms.pop(k)
        else:
            r, b = capacity, len(packs)
            packs.append([])
        packs[b].append(i)
        if r - n > 0:
            bisect.insort(rooms, (r - n, b))
    return packs


def main():
    with open(sys.argv[1]) as f:
        lengths = [int(line) for line in f if line.strip()]
    capacity = int(sys.argv[2])
    for name, fn in (("ffd", ffd), ("bfd_bisect", bfd_bisect)):
        start = time.perf_counter()
        packs = fn(lengths, capacity)
        seconds = time.perf_counter() - start
        tokens = sum(lengths)
        print(json.dumps({"algorithm": name, "packs": len(packs), "tokens": tokens,
                          "seconds": seconds}))


if __name__ == "__main__":
    main()
