#!/usr/bin/env python3
"""Zero the device code a GPU of one architecture never loads, in place, so
that a CUDA library compresses to fewer transfers to the GPU host.

    prune_fatbin.py LIBRARY.so --keep 90

Walks the ELF file's `.nv_fatbin` section: a run of fat binaries (header
magic 0xBA55ED50), each a list of entries (PTX or cubin) tagged with the SM
version they were built for. An entry's payload is zeroed (its header and
size kept, so offsets and the driver's walk stay valid) when it is
- a cubin for another SM version, or
- PTX in a fat binary that also holds a cubin for the kept version (the
  driver loads that cubin and never JIT-compiles the PTX).
A fat binary without a cubin for the kept version keeps its PTX: that is
what the driver would JIT. The file's size does not change; the library
then only works on GPUs of the kept version. Prints what it zeroed.
"""
import argparse
import struct
import sys

FATBIN_MAGIC = 0xBA55ED50
KIND_PTX, KIND_CUBIN = 1, 2


def section(data, name):
    """(offset, size) of the named section of a 64-bit little-endian ELF file."""
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        sys.exit("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    def header(i):
        return struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
    strtab = header(shstrndx)
    for i in range(shnum):
        h = header(i)
        start = strtab[4] + h[0]
        if data[start:data.index(b"\0", start)].decode() == name:
            return h[4], h[5]
    sys.exit(f"no {name} section")


def entries(data, start, end):
    """Each fat binary in [start, end): a list of (kind, sm, payload offset, payload size)."""
    off = start
    while off + 16 <= end:
        magic, _version, header_size, fat_size = struct.unpack_from("<IHHQ", data, off)
        if magic != FATBIN_MAGIC:
            # Fat binaries are aligned; skip padding between them.
            off += 8
            continue
        body, body_end = off + header_size, off + header_size + fat_size
        found = []
        e = body
        while e + 32 <= body_end:
            kind, _v, e_header, padded = struct.unpack_from("<HHII", data, e)
            sm, = struct.unpack_from("<I", data, e + 28)
            if e_header == 0:
                break
            found.append((kind, sm, e + e_header, padded))
            e += e_header + padded
        yield found
        off = body_end


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("library")
    p.add_argument("--keep", type=int, required=True, help="SM version to keep, e.g. 90")
    args = p.parse_args()
    with open(args.library, "rb") as f:
        data = bytearray(f.read())
    offset, size = section(data, ".nv_fatbin")
    zeroed = kept = binaries = 0
    for found in entries(data, offset, offset + size):
        binaries += 1
        has_kept_cubin = any(k == KIND_CUBIN and sm == args.keep for k, sm, _, _ in found)
        for kind, sm, payload, padded in found:
            drop = (kind == KIND_CUBIN and sm != args.keep) or (kind == KIND_PTX and has_kept_cubin)
            if drop:
                data[payload:payload + padded] = bytes(padded)
                zeroed += padded
            else:
                kept += padded
    with open(args.library, "wb") as f:
        f.write(data)
    print(f"{args.library}: {binaries} fat binaries; zeroed {zeroed / 2**20:.1f} MiB, kept {kept / 2**20:.1f} MiB (sm_{args.keep} cubins and PTX without one)")


if __name__ == "__main__":
    main()
