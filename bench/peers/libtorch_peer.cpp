// libtorch peer: the canonical workloads written against PyTorch's C++ API,
// which is what a C or C++ application would use instead of Tessera. Built by
// bench/run against the headers and libraries of the PyPI torch wheel in the
// harness's Python environment; speaks the protocol of
// bench/common/bench_protocol.h.
//
// Configuration from the environment, set by the harness: OMP_NUM_THREADS,
// MKL_NUM_THREADS, GLIBC_TUNABLES, and TSR_BENCH_TORCH_THREADS
// (at::set_num_threads, default 2).
#include <torch/torch.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

extern "C" {
#include "bench_protocol.h"
}

namespace {

namespace nn = torch::nn;

struct Workload {
  virtual ~Workload() = default;
  virtual void iterate() = 0;
  virtual bool inference() const { return false; }
};

nn::Sequential mlp() {
  return nn::Sequential(nn::Linear(784, 512), nn::ReLU(), nn::Linear(512, 512), nn::ReLU(),
                        nn::Linear(512, 10));
}

nn::Sequential cnn() {
  return nn::Sequential(nn::Conv2d(nn::Conv2dOptions(1, 32, 3)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)),
                        nn::Conv2d(nn::Conv2dOptions(32, 64, 3)), nn::ReLU(),
                        nn::MaxPool2d(nn::MaxPool2dOptions(2)), nn::Flatten(),
                        nn::Linear(1600, 128), nn::ReLU(), nn::Linear(128, 10));
}

struct Dispatch : Workload {
  torch::Tensor a = torch::rand({16}), b = torch::rand({16});
  void iterate() override { (void)(a + b); }
};

struct Sgemm : Workload {
  torch::Tensor a, b;
  explicit Sgemm(int64_t n) : a(torch::rand({n, n}) - 0.5), b(torch::rand({n, n}) - 0.5) {}
  void iterate() override { (void)torch::mm(a, b); }
};

struct Add16M : Workload {
  torch::Tensor a = torch::rand({16 * 1024 * 1024}), b = torch::rand({16 * 1024 * 1024});
  void iterate() override { (void)(a + b); }
};

// Forward and backward of the CNN's two convolutions at batch 64; no input
// gradient for layer 1.
struct Conv : Workload {
  nn::Conv2d c1{nn::Conv2dOptions(1, 32, 3)}, c2{nn::Conv2dOptions(32, 64, 3)};
  torch::Tensor x1 = torch::randn({64, 1, 28, 28});
  torch::Tensor x2 = torch::randn({64, 32, 13, 13}).requires_grad_(true);
  torch::Tensor dy1 = torch::randn({64, 32, 26, 26}), dy2 = torch::randn({64, 64, 11, 11});
  void iterate() override {
    torch::Tensor y1 = c1->forward(x1);
    torch::autograd::grad({y1}, {c1->weight, c1->bias}, {dy1});
    torch::Tensor y2 = c2->forward(x2);
    torch::autograd::grad({y2}, {x2, c2->weight, c2->bias}, {dy2});
  }
};

struct MlpTrain : Workload {
  nn::Sequential model = mlp();
  torch::optim::SGD opt{model->parameters(), torch::optim::SGDOptions(0.01).momentum(0.9)};
  torch::Tensor x = torch::randn({128, 784}), y = torch::randint(0, 10, {128});
  void iterate() override {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    opt.step();
  }
};

struct CnnTrain : Workload {
  nn::Sequential model = cnn();
  torch::optim::Adam opt{model->parameters(), torch::optim::AdamOptions(1e-3)};
  torch::Tensor x = torch::randn({64, 1, 28, 28}), y = torch::randint(0, 10, {64});
  void iterate() override {
    opt.zero_grad();
    torch::nn::functional::cross_entropy(model->forward(x), y).backward();
    opt.step();
  }
};

struct MlpInfer : Workload {
  nn::Sequential model = mlp();
  torch::Tensor x = torch::randn({1, 784});
  MlpInfer() { model->eval(); }
  bool inference() const override { return true; }
  void iterate() override { (void)model->forward(x); }
};

struct Peer {
  std::unique_ptr<Workload> current;
  std::string name;
  int64_t arg = -1;
};

bench_result run(void *user, const bench_request *request, double *out_samples, char *message,
                 size_t size) {
  Peer *peer = static_cast<Peer *>(user);
  const std::string name = request->workload;
  try {
    if (!peer->current || peer->name != name || peer->arg != request->arg) {
      peer->current.reset();
      torch::manual_seed(0);
      if (name == "dispatch") peer->current = std::make_unique<Dispatch>();
      else if (name == "sgemm") peer->current = std::make_unique<Sgemm>(request->arg);
      else if (name == "add_16M") peer->current = std::make_unique<Add16M>();
      else if (name == "conv") peer->current = std::make_unique<Conv>();
      else if (name == "mlp_train") peer->current = std::make_unique<MlpTrain>();
      else if (name == "cnn_train") peer->current = std::make_unique<CnnTrain>();
      else if (name == "mlp_infer") peer->current = std::make_unique<MlpInfer>();
      else {
        std::snprintf(message, size, "the libtorch peer has no %s workload", name.c_str());
        return BENCH_NOT_YET;
      }
      peer->name = name;
      peer->arg = request->arg;
    }
    Workload *w = peer->current.get();
    std::unique_ptr<c10::InferenceMode> guard;
    if (w->inference()) guard = std::make_unique<c10::InferenceMode>();
    for (int32_t i = 0; i < request->warmup; ++i) w->iterate();
    for (int32_t s = 0; s < request->samples; ++s) {
      double t0 = bench_now();
      for (int64_t i = 0; i < request->inner; ++i) w->iterate();
      out_samples[s] = (bench_now() - t0) / static_cast<double>(request->inner);
    }
    return BENCH_OK;
  } catch (const std::exception &e) {
    peer->current.reset();
    std::snprintf(message, size, "%s: %s", name.c_str(), e.what());
    return BENCH_ERROR;
  }
}

void info(void *, FILE *out) {
  std::fputs("\"name\":\"libtorch\",\"version\":", out);
  bench_json_string(out, TORCH_VERSION);
  std::fprintf(out, ",\"torch_threads\":%d,\"parallel_info\":", at::get_num_threads());
  bench_json_string(out, at::get_parallel_info().c_str());
  std::fputs(",\"compiler\":", out);
  bench_json_string(out, __VERSION__);
}

}  // namespace

int main() {
  const char *threads = std::getenv("TSR_BENCH_TORCH_THREADS");
  at::set_num_threads(threads != nullptr && threads[0] != '\0' ? std::atoi(threads) : 2);
  at::set_num_interop_threads(1);  // as the Python peer: intra-op threads only
  Peer peer;
  return bench_serve(run, info, &peer);
}
