"""Copies an artifact with one field of its descriptor overwritten, as damage on disk would.

usage: patch_descriptor.py IN.so OUT.so FIELD VALUE
The descriptor (runtime/src/artifact.h) is found by its magic "AOTC" and format (that header's) followed by
two pointers and the counts of entries and weights; the layout is x86-64's.
"""
import os
import re
import struct
import sys

FIELDS = {"num_entries": (24, "<i"), "num_weights": (28, "<i"), "weights_size": (56, "<Q"),
          "program_size": (104, "<Q"), "weights_hash": (112, "<Q"),
          "cpu_precision": (124, "<I")}

src, dst, field, value = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
data = bytearray(open(src, "rb").read())
header = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4, "runtime",
                      "src", "artifact.h")
version = int(re.search(r"#define AOTC_ARTIFACT_FORMAT (\d+)u", open(header).read()).group(1))
head = struct.pack("<II", 0x43544F41, version)
found = []
i = data.find(head)
while i >= 0:
    if i + 136 <= len(data) and 0 < struct.unpack_from("<i", data, i + 24)[0] < 1000:
        found.append(i)
    i = data.find(head, i + 1)
if len(found) != 1:
    sys.exit(f"{src}: found {len(found)} descriptors")
offset, fmt = FIELDS[field]
struct.pack_into(fmt, data, found[0] + offset, value)
open(dst, "wb").write(bytes(data))
