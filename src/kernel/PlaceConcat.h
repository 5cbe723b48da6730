// place-concat: the kernel-IR pass that puts the pieces of a concatenation into an entry's output
// where it would copy them. A loop kernel that only copies whole temporaries into an output
// (aten.cat or aten.stack, nested or not, lowered to one kernel choosing its source by selects on
// its loops) costs a read and a write of every element; when each piece is a contiguous part of
// the output, the piece becomes a view of that part (kir::Buffer::viewOffset): its producer
// writes there, its readers read there, and the kernel goes away. GPT-2's decode step stacks
// every layer's keys and values into `present`: the whole cache was written twice a step.
#ifndef AOTC_KERNEL_PLACECONCAT_H
#define AOTC_KERNEL_PLACECONCAT_H

#include "kernel/Kernel.h"

namespace aotc::kir {

/// For every entry of `program`: each top-level loop kernel of one store stage over no inner
/// loops that writes an output buffer (not a view, written by no other step) in row-major order
/// of its outer loops, whose value is a tree of selects on `loop < bound` (a constant or a
/// dim) with loads at the leaves, each leaf a distinct arena buffer of the output's dtype read
/// whole and in order over a contiguous part of the output (the loops before it at one point,
/// the ones after it whole) that starts a multiple of 16 bytes into it, the parts tiling the
/// output, and none of those buffers written after the kernel: each leaf's buffer becomes that part
/// of the output (kind Output, its viewOffset the part's first element) and the kernel is removed.
/// Run before plan-memory.
void placeConcats(Program &program);

} // namespace aotc::kir

#endif
