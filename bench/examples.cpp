// SPDX-License-Identifier: Apache-2.0
// Writes the example models used by `./dev audit` and the README into a folder, with torch::jit
// (no Python needed):
//   reduce_mlp.pt  a small MLP whose loss is a large float reduction (thread-count dependent on CPU)
//   conv_net.pt    a small convolutional net (for --device cuda with cuDNN configurations)
#include <torch/script.h>

#include <filesystem>
#include <iostream>

namespace {

at::Tensor seeded(std::vector<int64_t> sizes, uint64_t seed) {
  auto gen = at::make_generator<at::CPUGeneratorImpl>(seed);
  return at::randn(sizes, gen) * 0.05;
}

void reduce_mlp(const std::string& path) {
  torch::jit::Module m("ReduceMLP");
  m.register_parameter("w1", seeded({4096, 256}, 1), false);
  m.register_parameter("b1", seeded({256}, 2), false);
  m.register_parameter("w2", seeded({256, 4096}, 3), false);
  m.define(R"JIT(
def forward(self, x):
    h = torch.tanh(torch.matmul(x, self.w1) + self.b1)
    y = torch.matmul(h, self.w2)
    return (y * y).sum() / 1000.0
)JIT");
  m.save(path);
}

void conv_net(const std::string& path) {
  torch::jit::Module m("ConvNet");
  m.register_parameter("c1", seeded({16, 3, 3, 3}, 4), false);
  m.register_parameter("c2", seeded({32, 16, 3, 3}, 5), false);
  m.register_parameter("fc", seeded({10, 32}, 6), false);
  m.define(R"JIT(
def forward(self, x):
    h = torch.relu(torch.conv2d(x, self.c1, None, [1, 1], [1, 1]))
    h = torch.relu(torch.conv2d(h, self.c2, None, [2, 2], [1, 1]))
    h = torch.mean(h, [2, 3])
    return torch.matmul(h, self.fc.t())
)JIT");
  m.save(path);
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage =
      "usage: repro-audit-examples OUT_DIR\n  writes reduce_mlp.pt and conv_net.pt into OUT_DIR\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << usage;
    return 0;
  }
  if (argc != 2 || argv[1][0] == '-') {
    std::cerr << usage;
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir);
  reduce_mlp((dir / "reduce_mlp.pt").string());
  conv_net((dir / "conv_net.pt").string());
  std::cout << "wrote " << (dir / "reduce_mlp.pt").string() << " and " << (dir / "conv_net.pt").string() << "\n";
  return 0;
}
