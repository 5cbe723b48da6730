// RUN: %aotc export %s --emit=ir --entry bert --entry selected --entry buffer --entry sliced 2>/dev/null | FileCheck --check-prefix=FITS %s
// RUN: rm -f %t.so
// RUN: not %aotc export %s --dyn seq=1..1024 --entry bert -o %t.so 2>&1 | FileCheck %s
// RUN: test ! -e %t.so
// RUN: not %aotc export %s --dyn seq=1..1024 --emit=ir --report 2>&1 | FileCheck --check-prefix=REPORT %s
// RUN: not %aotc export %s --dyn seq=600..1024 --emit=ir --entry sliced 2>&1 | FileCheck --check-prefix=NEVER %s
// Export refuses a range the model cannot serve when the graph shows it: positions arange(seq)
// looked up in a table of 512 rows (an embedding, index_select), a buffer of position ids or a
// learned position table sliced to seq. `--dyn seq=1..1024` on a BERT with 512 positions used to
// export silently and fail at run time; now it is one line naming the table, the dim, its range
// and the range that holds. With the model's own range (1..512) these entries export; positions
// after a cache of `past` ones need past + seq <= 512, which independent ranges never prove.
#include <aotc/aotc.h>
using namespace aotc;

struct M : nn::Module {
  M() {
    words = register_module("words", nn::Embedding(100, 8));
    positions = register_module("positions", nn::Embedding(512, 8));
    table = register_parameter("table", zeros({512, 8}));
    learned = register_parameter("learned", zeros({1, 512, 8}));
    position_ids = register_buffer("position_ids", zeros({1, 512}, i64));
  }
  Tensor bert(Tensor ids) {
    Tensor pos = arange(ids.size(1), i64).unsqueeze(0);
    return words(ids) + positions(pos);
  }
  Tensor selected(Tensor ids) { return table.index_select(0, arange(ids.size(1), i64)); }
  Tensor buffer(Tensor ids) {
    return positions(position_ids.slice(1, 0, ids.size(1)));
  }
  Tensor sliced(Tensor x) { return x + learned.slice(1, 0, x.size(1)); }
  Tensor cached(Tensor ids, Tensor past) {
    SymInt start = past.size(1);
    return positions(arange(start, start + ids.size(1), 1, i64));
  }
  nn::Embedding words{nullptr}, positions{nullptr};
  Tensor table, learned, position_ids;
};

AOTC_MODEL(M, dim("batch", 1, 8), dim("seq", 1, 512), dim("past", 0, 511),
           AOTC_ENTRY(bert, input("ids", {"batch", "seq"}, i64)),
           AOTC_ENTRY(selected, input("ids", {"batch", "seq"}, i64)),
           AOTC_ENTRY(buffer, input("ids", {"batch", "seq"}, i64)),
           AOTC_ENTRY(sliced, input("x", {"batch", "seq", 8})),
           AOTC_ENTRY(cached, input("ids", {"batch", "seq"}, i64), input("past", {"batch", "past", 8})));

// FITS: entry @bert(
// FITS: entry @selected(
// FITS: entry @buffer(
// FITS: entry @sliced(

// CHECK: aotc export: error: {{.*}}position_limits.cpp:26: the positions arange(0, seq) index parameter "positions.weight" (f32[512, 8]) along dim 0: seq is dynamic in 1..1024 but this code requires seq <= 512; export with --dyn seq=1..512

// REPORT:      6 problems found:
// REPORT-NEXT: position_limits.cpp:26: the positions arange(0, seq) index parameter "positions.weight" (f32[512, 8]) along dim 0: seq is dynamic in 1..1024 but this code requires seq <= 512; export with --dyn seq=1..512
// REPORT-NEXT: position_limits.cpp:28: the positions arange(0, seq) index parameter "table" (f32[512, 8]) along dim 0: seq is dynamic in 1..1024 but this code requires seq <= 512; export with --dyn seq=1..512
// REPORT-NEXT: position_limits.cpp:30: buffer "position_ids" (i64[1, 512]) is sliced to seq along dim 1: seq is dynamic in 1..1024 but this code requires seq <= 512; export with --dyn seq=1..512
// REPORT-NEXT: position_limits.cpp:32: parameter "learned" (f32[1, 512, 8]) is sliced to seq along dim 1: seq is dynamic in 1..1024 but this code requires seq <= 512; export with --dyn seq=1..512
// REPORT-NEXT: position_limits.cpp:32: seq is dynamic in 1..1024 but this code requires seq == min(seq, 512); export with --dyn seq=1..512
// REPORT-NEXT: position_limits.cpp:35: the positions arange(past, past + seq) index parameter "positions.weight" (f32[512, 8]) along dim 0: this code requires past + seq <= 512, which the ranges of the dynamic dims (past in 0..511, seq in 1..1024) do not guarantee; narrow them with --dyn or declare the relation with aotc::derived_dim

// NEVER: aotc export: error: {{.*}}position_limits.cpp:32: parameter "learned" (f32[1, 512, 8]) is sliced to seq along dim 1: this needs seq <= 512, which no value of the dynamic dims (seq in 600..1024) satisfies
