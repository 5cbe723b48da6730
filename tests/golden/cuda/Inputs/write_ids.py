"""Writes an int64 vector as a .npy file (no numpy needed): write_ids.py OUT.npy V0 V1 ..."""
import struct
import sys

values = [int(v) for v in sys.argv[2:]]
header = "{'descr': '<i8', 'fortran_order': False, 'shape': (%d,), }" % len(values)
header += " " * ((64 - (10 + len(header) + 1) % 64) % 64) + "\n"
with open(sys.argv[1], "wb") as f:
    f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(header)) + header.encode())
    f.write(struct.pack("<%dq" % len(values), *values))
