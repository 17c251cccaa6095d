#!/usr/bin/env python3
"""free_ports.py N: N distinct TCP ports for a test's servers to listen on, printed on one
line, and free_ports(n) for the Python tests.

Each is random in [10000, the kernel's range of ephemeral ports), so that no outgoing
connection (another test's, or one of the test's own replicas connecting to a peer) can
take it as its own before its server binds it, as one could a port the kernel chose; and
nobody's right now (all are bound until all are known, then released). Where that range
leaves no room, the kernel's choices. The same as the local executor's
tf_pick_local_ports (common/tfconfig.c), which the C tests call (tests/netutil.h).
"""
import random
import socket
import sys

LOWEST = 10000


def ephemeral_low():
    """The lowest port of the kernel's range for outgoing connections' own ports."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def free_ports(n):
    lo, rng, socks = ephemeral_low(), random.SystemRandom(), []
    try:
        while len(socks) < n:
            s = socket.socket()
            try:
                s.bind(("127.0.0.1", rng.randrange(LOWEST, lo) if lo - LOWEST >= 1000 else 0))
            except OSError:  # taken: another
                s.close()
                continue
            socks.append(s)
        return [s.getsockname()[1] for s in socks]
    finally:
        for s in socks:
            s.close()


if __name__ == "__main__":
    print(" ".join(str(p) for p in free_ports(int(sys.argv[1]))))
