// Runs the linked tiny MLP once through the C++ wrapper and prints its output shape.
#include <aotc/runtime.hpp>

#include <cstdio>
#include <vector>

int main() {
  try {
    aotc::rt::Model model(aotc::rt::Api::linked());
    std::vector<float> x(3 * 16, 0.25f);
    auto out = model.run("forward", {aotc::rt::tensor(x.data(), AOTC_DTYPE_F32, {3, 16})});
    std::printf("logits [%lld, %lld]\n", (long long)out[0].shape()[0],
                (long long)out[0].shape()[1]);
    return out[0].shape()[0] == 3 && out[0].shape()[1] == 4 ? 0 : 1;
  } catch (const aotc::rt::Error &e) {
    std::fprintf(stderr, "consumer: %s\n", e.what());
    return 1;
  }
}
