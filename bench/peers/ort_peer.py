"""ONNX Runtime peer: mlp_infer (the MLP 784-512-512-10 at batch 1).

The model is built in memory with onnx.helper (Gemm + Relu, float32, the
same shapes as the other participants) and run with the CPU execution
provider. Configuration from the environment, set by the harness:

    TSR_BENCH_ORT_THREADS    intra-op threads (default 2)
    TSR_BENCH_ORT_SPINNING   1 (ONNX Runtime's default) or 0: whether idle
                             intra-op threads spin

Speaks the protocol of protocol.py on stdin/stdout.
"""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import numpy as np  # noqa: E402
import onnx  # noqa: E402
import onnxruntime as ort  # noqa: E402
from onnx import TensorProto, helper, numpy_helper  # noqa: E402

from protocol import Server  # noqa: E402

THREADS = int(os.environ.get("TSR_BENCH_ORT_THREADS", "2"))
SPINNING = os.environ.get("TSR_BENCH_ORT_SPINNING", "1")


def mlp_model():
    rng = np.random.default_rng(0)
    dims = [784, 512, 512, 10]
    inits, nodes, prev = [], [], "x"
    for layer in range(3):
        w = (rng.standard_normal((dims[layer], dims[layer + 1])) /
             np.sqrt(dims[layer])).astype(np.float32)
        b = (0.1 * rng.standard_normal(dims[layer + 1])).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{layer}"), numpy_helper.from_array(b, f"b{layer}")]
        out = "y" if layer == 2 else f"g{layer}"
        nodes.append(helper.make_node("Gemm", [prev, f"w{layer}", f"b{layer}"], [out]))
        if layer < 2:
            nodes.append(helper.make_node("Relu", [out], [f"h{layer}"]))
            prev = f"h{layer}"
    graph = helper.make_graph(
        nodes, "mlp",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 784])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 10])], inits)
    # An opset every onnxruntime of the last years runs.
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model.SerializeToString()


class MlpInfer:
    def setup(self, arg):
        options = ort.SessionOptions()
        options.intra_op_num_threads = THREADS
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", SPINNING)
        self.session = ort.InferenceSession(mlp_model(), options,
                                            providers=["CPUExecutionProvider"])
        self.feed = {"x": np.random.default_rng(1).standard_normal((1, 784)).astype(np.float32)}

    def iterate(self):
        self.session.run(None, self.feed)


def info():
    return {
        "name": "onnxruntime",
        "version": ort.__version__,
        "onnx": onnx.__version__,
        "python": sys.version.split()[0],
        "executable": sys.executable,
        "intra_op_threads": THREADS,
        "allow_spinning": SPINNING,
        "providers": ort.get_available_providers(),
    }


if __name__ == "__main__":
    Server({"mlp_infer": MlpInfer}, info).serve()
