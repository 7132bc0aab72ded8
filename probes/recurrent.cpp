// SPDX-License-Identifier: Apache-2.0
// Recurrent layers: Elman RNN (tanh), LSTM and GRU, two layers, sequence-first, forward (inference,
// as after model.eval()) and backward (training), through the same ATen entry points nn.RNN,
// nn.LSTM and nn.GRU call (at::rnn_tanh, at::lstm, at::gru with a flat weight list).
//
// On CUDA these run in cuDNN whenever cuDNN accepts the input (the "strict" configuration turns it
// off and gets ATen's cell-by-cell kernels). PyTorch documents cuDNN's RNNs as nondeterministic
// unless cuBLAS gets a fixed workspace (CUBLAS_WORKSPACE_CONFIG): cuDNN runs its GEMMs on several
// streams, and the weight gradients sum over every time step and batch element. A long sequence
// (128) over a wide batch (64) and hidden size (512) gives large GEMMs with long reductions.
//
// As nn.RNNBase does before a call, the weights are first copied into one cuDNN-layout buffer
// (_cudnn_rnn_flatten_weight, under no_grad, the weights becoming views of it); otherwise cuDNN
// would compact them at every call and warn.
#include "probes/registry.h"

#include <ATen/Functions.h>
#include <c10/core/GradMode.h>

#include <cmath>

namespace ra::probes {
namespace {

enum class Cell { Tanh, Lstm, Gru };

struct RnnShape {
  int64_t seq, batch, input, hidden, layers;
};
RnnShape rnn_shape(const ProbeContext& ctx) {
  return ctx.cuda() ? RnnShape{128, 64, 256, 512, 2} : RnnShape{8, 4, 16, 32, 2};
}

int64_t gates(Cell cell) { return cell == Cell::Lstm ? 4 : cell == Cell::Gru ? 3 : 1; }
int64_t cudnn_mode(Cell cell) { return cell == Cell::Lstm ? 2 : cell == Cell::Gru ? 3 : 1; }  // cudnnRNNMode_t

struct Weights {
  std::vector<std::string> names;  // "l0.w_ih", "l0.w_hh", "l0.b_ih", "l0.b_hh", "l1.w_ih", ...
  std::vector<at::Tensor> tensors;
};

// Built by appending: GCC 12 warns falsely (-Wrestrict) on the operator+ chain.
std::string weight_name(int64_t layer, const std::string& name) {
  std::string out = "l";
  out += std::to_string(layer);
  out += '.';
  out += name;
  return out;
}

// Each layer's w_ih, w_hh, b_ih, b_hh in nn.RNN's order and init (U(-k, k), k = 1/sqrt(hidden)).
Weights make_weights(ProbeContext& ctx, Cell cell, const RnnShape& s, bool requires_grad) {
  Weights w;
  const double k = 1.0 / std::sqrt(static_cast<double>(s.hidden));
  const int64_t rows = gates(cell) * s.hidden;
  for (int64_t l = 0; l < s.layers; ++l) {
    const int64_t in = l == 0 ? s.input : s.hidden;
    const std::vector<std::pair<std::string, std::vector<int64_t>>> shapes = {
        {"w_ih", {rows, in}}, {"w_hh", {rows, s.hidden}}, {"b_ih", {rows}}, {"b_hh", {rows}}};
    for (const auto& [name, shape] : shapes) {
      w.names.push_back(weight_name(l, name));
      w.tensors.push_back(ctx.rand(shape).mul_(2 * k).sub_(k).requires_grad_(requires_grad));
    }
  }
  return w;
}

// What nn.RNNBase.flatten_parameters does: one buffer in cuDNN's layout, the weights views of it.
void flatten_for_cudnn(const at::Tensor& x, Cell cell, const RnnShape& s, const Weights& w) {
  if (!at::cudnn_is_acceptable(x)) return;
  const at::NoGradGuard no_grad;
  at::_cudnn_rnn_flatten_weight(w.tensors, /*weight_stride0=*/4, s.input, cudnn_mode(cell), s.hidden,
                                /*proj_size=*/0, s.layers, /*batch_first=*/false, /*bidirectional=*/false);
}

void run_rnn(ProbeContext& ctx, Cell cell, bool backward) {
  const RnnShape s = rnn_shape(ctx);
  const at::Tensor x = backward ? ctx.leaf({s.seq, s.batch, s.input}) : ctx.randn({s.seq, s.batch, s.input});
  const at::Tensor h0 = ctx.randn({s.layers, s.batch, s.hidden}).mul_(0.5);
  const Weights w = make_weights(ctx, cell, s, backward);
  flatten_for_cudnn(x, cell, s, w);
  // dropout 0; `train` selects cuDNN's training or inference forward.
  at::Tensor output;
  switch (cell) {
    case Cell::Tanh: {
      auto [y, hn] = at::rnn_tanh(x, h0, w.tensors, true, s.layers, 0.0, backward, false, false);
      output = y;
      ctx.record("h_n", hn);
      break;
    }
    case Cell::Gru: {
      auto [y, hn] = at::gru(x, h0, w.tensors, true, s.layers, 0.0, backward, false, false);
      output = y;
      ctx.record("h_n", hn);
      break;
    }
    case Cell::Lstm: {
      const at::Tensor c0 = ctx.randn({s.layers, s.batch, s.hidden}).mul_(0.5);
      auto [y, hn, cn] = at::lstm(x, {h0, c0}, w.tensors, true, s.layers, 0.0, backward, false, false);
      output = y;
      ctx.record("h_n", hn);
      ctx.record("c_n", cn);
      break;
    }
  }
  ctx.record("output", output);
  if (!backward) return;
  std::vector<std::pair<std::string, at::Tensor>> leaves = {{"input", x}};
  for (size_t i = 0; i < w.tensors.size(); ++i) leaves.emplace_back(w.names[i], w.tensors[i]);
  ctx.backward(output, leaves);
}

void add_cell(ProbeList& out, Cell cell, const std::string& name, const std::string& op) {
  const std::string shape =
      "float32, 2 layers, seq-first, with biases (CUDA: seq 128, batch 64, input 256, hidden 512)";
  out.push_back(make_probe({name + ".forward", "recurrent", op, true, true, Direction::Forward, "rnn.cuda", Role::Probe,
                            shape + "; inference forward: output and final states"},
                           [cell](ProbeContext& ctx) { run_rnn(ctx, cell, false); }));
  out.push_back(make_probe({name + ".backward", "recurrent", op, true, true, Direction::Backward, "rnn.cuda",
                            Role::Probe, shape + "; training forward and backward: gradients of input and weights"},
                           [cell](ProbeContext& ctx) { run_rnn(ctx, cell, true); }));
}

}  // namespace

void register_recurrent(ProbeList& out) {
  add_cell(out, Cell::Tanh, "rnn_tanh", "aten::rnn_tanh");
  add_cell(out, Cell::Lstm, "lstm", "aten::lstm");
  add_cell(out, Cell::Gru, "gru", "aten::gru");
}

}  // namespace ra::probes
