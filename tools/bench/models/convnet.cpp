// A small ResNet-style network over 32x32 images with a dynamic batch: the benchmark's
// convolution case (3x3 and 1x1 convolutions with folded batch norm, residual adds, a stride-2
// block, max pooling, adaptive average pooling and a linear head). bench.py builds the same
// network in PyTorch.
#include <aotc/aotc.h>

using namespace aotc;

struct BasicBlock : nn::Module {
  BasicBlock(int64_t in, int64_t out, int64_t stride) {
    conv1 = register_module(
        "conv1",
        nn::Conv2d(
            nn::Conv2dOptions(in, out, 3).stride({stride, stride}).padding({1, 1}).bias(false)));
    bn1 = register_module("bn1", nn::BatchNorm2d(out));
    conv2 = register_module("conv2",
                            nn::Conv2d(nn::Conv2dOptions(out, out, 3).padding({1, 1}).bias(false)));
    bn2 = register_module("bn2", nn::BatchNorm2d(out));
    if (stride != 1 || in != out) {
      down_conv = register_module(
          "down_conv",
          nn::Conv2d(nn::Conv2dOptions(in, out, 1).stride({stride, stride}).bias(false)));
      down_bn = register_module("down_bn", nn::BatchNorm2d(out));
    }
  }

  Tensor forward(Tensor x) {
    Tensor y = relu(bn1(conv1(x)));
    y = bn2(conv2(y));
    Tensor skip = down_conv.is_empty() ? x : down_bn(down_conv(x));
    return relu(y + skip);
  }

  nn::Conv2d conv1{nullptr}, conv2{nullptr}, down_conv{nullptr};
  nn::BatchNorm2d bn1{nullptr}, bn2{nullptr}, down_bn{nullptr};
};

struct ConvNet : nn::Module {
  ConvNet() {
    stem = register_module("stem",
                           nn::Conv2d(nn::Conv2dOptions(3, 32, 3).padding({1, 1}).bias(false)));
    bn = register_module("bn", nn::BatchNorm2d(32));
    layer1 = register_module("layer1", std::make_shared<BasicBlock>(32, 32, 1));
    layer2 = register_module("layer2", std::make_shared<BasicBlock>(32, 64, 2));
    layer3 = register_module("layer3", std::make_shared<BasicBlock>(64, 128, 1));
    fc = register_module("fc", nn::Linear(128, 10));
  }

  Tensor forward(Tensor x) {
    x = relu(bn(stem(x)));
    x = max_pool2d(x, {2, 2}, {2, 2});
    x = layer3->forward(layer2->forward(layer1->forward(x)));
    x = adaptive_avg_pool2d(x, {1, 1}).flatten(1);
    return fc(x);
  }

  nn::Conv2d stem{nullptr};
  nn::BatchNorm2d bn{nullptr};
  std::shared_ptr<BasicBlock> layer1, layer2, layer3;
  nn::Linear fc{nullptr};
};

AOTC_MODEL(ConvNet, dim("batch", 1, 64),
           AOTC_ENTRY(forward, input("x", {"batch", 3, 32, 32}), outputs({"logits"})));
