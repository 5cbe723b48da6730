// A U-Net small enough for tests: 3 channels in, 2 classes out, 8 channels at the top, two
// levels down (sizes multiples of 4), batch norms with random statistics.
// tools/dev/make_unet_fixtures.py builds the same network in PyTorch.
#include "unet.h"

using namespace aotc;

struct UNetTiny : unet::UNet {
  UNetTiny() : UNet(3, 2, 8, 2) { mobilenet::randomize_batch_norms(*this); }
};

AOTC_MODEL(UNetTiny, dim("batch", 1, 8), dim("h", 4, 128).multiple_of(4),
           dim("w", 4, 128).multiple_of(4),
           AOTC_ENTRY(forward, input("x", {"batch", 3, "h", "w"}), outputs({"logits"})));
