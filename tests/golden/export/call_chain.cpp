// RUN: not %aotc export %s --emit=ir --report 2>&1 | FileCheck %s
// An error inside a user's own module names the chain of model lines that led there, outermost
// first: the entry's call of the encoder, the encoder's call of the block (through its holder,
// with one argument or several, or a Sequential), then the line of the op. It used to name only
// the op's own line. A method called directly (encoder->stacked(x)) adds no line; ops of the
// standard modules are at their caller's line, as before; errors the DSL throws (a bad chunk)
// carry the chain too.
#include <aotc/aotc.h>
using namespace aotc;

struct BlockImpl : nn::Module {
  BlockImpl() { fc = register_module("fc", nn::Linear(16, 16)); }
  Tensor forward(const Tensor &x) { return fc(x.view({x.size(0), 3, -1})); }
  nn::Linear fc{nullptr};
};
AOTC_MODULE(Block);

struct PairImpl : nn::Module {
  Tensor forward(const Tensor &x, const Tensor &y) { return x.chunk(0, 1)[0] + y; }
};
AOTC_MODULE(Pair);

struct EncoderImpl : nn::Module {
  EncoderImpl() {
    block = register_module("block", Block());
    layers = register_module("layers", nn::Sequential(Block()));
    pair = register_module("pair", Pair());
  }
  Tensor forward(const Tensor &x) { return block(x); }
  Tensor stacked(const Tensor &x) { return layers(x); }
  Tensor paired(const Tensor &x) { return pair(x, x); }
  Block block{nullptr};
  nn::Sequential layers{nullptr};
  Pair pair{nullptr};
};
AOTC_MODULE(Encoder);

struct M : nn::Module {
  M() { encoder = register_module("encoder", Encoder()); }
  Tensor forward(Tensor x) { return encoder(x); }
  Tensor stacked(Tensor x) { return encoder->stacked(x); }
  Tensor paired(Tensor x) { return encoder->paired(x); }
  Tensor direct(Tensor x) { return x.view({x.size(0), 3, -1}); }
  Encoder encoder{nullptr};
};

AOTC_MODEL(M, dim("batch", 1, 8), AOTC_ENTRY(forward, input("x", {"batch", 16})),
           AOTC_ENTRY(stacked, input("x", {"batch", 16})),
           AOTC_ENTRY(paired, input("x", {"batch", 16})),
           AOTC_ENTRY(direct, input("x", {"batch", 16})));

// CHECK:      4 problems found:
// CHECK-NEXT: {{.*}}call_chain.cpp:40 -> {{.*}}call_chain.cpp:29 -> {{.*}}call_chain.cpp:13: aten.view: cannot view f32[batch, 16] as [batch, 3, -1]: 16*batch elements are not a multiple of 3*batch
// CHECK-NEXT: {{.*}}call_chain.cpp:30 -> {{.*}}call_chain.cpp:13: aten.view: cannot view f32[batch, 16] as [batch, 3, -1]: 16*batch elements are not a multiple of 3*batch
// CHECK-NEXT: {{.*}}call_chain.cpp:31 -> {{.*}}call_chain.cpp:19: chunk needs a positive number of chunks, got 0
// CHECK-NEXT: {{.*}}call_chain.cpp:43: aten.view: cannot view f32[batch, 16] as [batch, 3, -1]: 16*batch elements are not a multiple of 3*batch
