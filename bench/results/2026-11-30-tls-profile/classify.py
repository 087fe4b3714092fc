#!/usr/bin/env python3
"""Sorts the samples of `perf script` output (dwarf call graphs) into where the CPU went:
TLS crypto (libcrypto/libssl), copies by caller, kernel socket copies, TCP, scheduling."""
import collections
import sys

KEYS = ("BIO_read", "BIO_write", "SSL_read", "SSL_write", "RunGetStream", "GetReactor")


def classify(frames):
    leaf = frames[0]
    if "memmove" in leaf or "memcpy" in leaf:
        for f in frames[1:]:
            for k in KEYS:
                if k in f:
                    return "copy in " + k
        return "copy, other"
    if "libcrypto" in leaf or "libssl" in leaf:
        return "libcrypto/libssl"
    if "[kernel" in leaf:
        for f in frames:
            if "copy_to_iter" in f or "copy_from_iter" in f:
                return "kernel: socket copy"
            if "schedule" in f or "futex" in f or "try_to_wake" in f:
                return "kernel: scheduling, futex"
            if "tcp_" in f:
                return "kernel: TCP"
        return "kernel: other"
    return "other"


def main():
    samples = [s.strip().split("\n") for s in open(sys.argv[1]).read().split("\n\n")]
    samples = [s for s in samples if len(s) > 1]
    counts = collections.Counter(classify([l.strip() for l in s[1:]]) for s in samples)
    seconds = len(samples) / float(sys.argv[2])  # samples / frequency = CPU seconds
    gigabytes = float(sys.argv[3])
    print(f"{len(samples)} samples, {seconds:.2f} CPU-s, {seconds / gigabytes:.2f} CPU-s per GB")
    for k, v in counts.most_common():
        print(f"{k:28s} {100 * v / len(samples):5.1f}%  {seconds * v / len(samples) / gigabytes:5.2f} CPU-s/GB")


if __name__ == "__main__":
    main()
