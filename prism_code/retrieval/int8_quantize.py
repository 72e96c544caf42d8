"""Dynamic int8 quantization of an ONNX graph's constant MatMuls and embedding tables.

The same graph and the same numbers as onnxruntime's ``quantize_dynamic(per_channel=True,
weight_type=QInt8)`` on this model (tests/test_int8_matmul.py compares them), written with
the ``onnx`` protobuf helpers alone. quantize_dynamic itself cannot be used: it saves a copy
of the model for shape inference with ``onnx.save_model(save_as_external_data=True)``, which
names the data file ``uuid.uuid1()``; libuuid then reads the machine's MAC address through an
AF_INET socket (tests/test_privacy.py). No external data, no uuid here.

* ``MatMul(A, B)`` with B a float initializer (K, N): B becomes int8, symmetric per output
  column (zero point 0, scale absmax/127); A is quantized per call by
  ``DynamicQuantizeLinear`` (uint8, one scale per tensor), shared by the MatMuls that read it;
  ``MatMulInteger`` -> ``Cast`` to float -> ``Mul`` by A's scale times B's.
* ``Gather(table, ids)`` with a float initializer table: the table becomes uint8 with one
  asymmetric scale, and a ``DequantizeLinear`` follows the Gather.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

# Symmetric int8 uses [-127, 127] so that zero sits in the middle (onnxruntime's
# ONNX_INT_TYPE_SYMMETRIC_RANGE); values are still clipped to the full int8 range.
_INT8_SYMMETRIC_STEPS = 254
_UINT8_STEPS = 255


@dataclass(frozen=True)
class QuantizedCounts:
    matmuls: int
    gathers: int


def quantize_int8_file(source: Path, target: Path) -> QuantizedCounts:
    """Write the quantized form of the model at `source` (no external data) to `target`."""
    import onnx

    model = onnx.load(str(source))
    counts = quantize_int8(model)
    onnx.save_model(model, str(target))
    return counts


def quantize_int8(model: Any) -> QuantizedCounts:  # an onnx.ModelProto; edited in place
    from onnx import TensorProto, helper, numpy_helper

    graph = model.graph
    floats = {init.name: init for init in graph.initializer if init.data_type == TensorProto.FLOAT}
    replaced: set[str] = set()  # float initializers now stored quantized
    added: list[Any] = []  # new initializers
    quantized_inputs: dict[str, tuple[str, str, str]] = {}  # activation -> (q, scale, zero point)
    nodes: list[Any] = []
    matmuls = gathers = 0

    for node in graph.node:
        if node.op_type == "MatMul" and node.input[1] in floats and len(floats[node.input[1]].dims) == 2:
            activation, weight = node.input[0], node.input[1]
            w_q, w_scale, w_zp = f"{weight}_quantized", f"{weight}_scale", f"{weight}_zero_point"
            if weight not in replaced:
                q, scale = _int8_per_column(numpy_helper.to_array(floats[weight]))
                added += [numpy_helper.from_array(q, w_q), numpy_helper.from_array(scale, w_scale),
                          numpy_helper.from_array(np.zeros(scale.shape, np.int8), w_zp)]
                replaced.add(weight)
            if activation not in quantized_inputs:
                names = (f"{activation}_quantized", f"{activation}_scale", f"{activation}_zero_point")
                nodes.append(helper.make_node("DynamicQuantizeLinear", [activation], list(names),
                                              f"{activation}_QuantizeLinear"))
                quantized_inputs[activation] = names
            a_q, a_scale, a_zp = quantized_inputs[activation]
            name = f"{node.name}_quant" if node.name else f"{node.output[0]}_quant"
            product = f"{node.output[0]}_output_quantized"
            nodes += [
                helper.make_node("Mul", [a_scale, w_scale], [f"{name}_scales_mul:0"], f"{name}_scales_mul"),
                helper.make_node("MatMulInteger", [a_q, w_q, a_zp, w_zp], [product], name),
                helper.make_node("Cast", [product], [f"{product}_cast_output"], f"{product}_cast",
                                 to=TensorProto.FLOAT),
                helper.make_node("Mul", [f"{product}_cast_output", f"{name}_scales_mul:0"],
                                 [node.output[0]], f"{name}_output_scale_mul"),
            ]
            matmuls += 1
        elif node.op_type == "Gather" and node.input[0] in floats:
            table = node.input[0]
            t_q, t_scale, t_zp = f"{table}_quantized", f"{table}_scale", f"{table}_zero_point"
            if table not in replaced:
                q, scale, zero_point = _uint8_per_tensor(numpy_helper.to_array(floats[table]))
                added += [numpy_helper.from_array(q, t_q), numpy_helper.from_array(scale, t_scale),
                          numpy_helper.from_array(zero_point, t_zp)]
                replaced.add(table)
            gathered = f"{node.output[0]}_quantized"
            attributes = {a.name: helper.get_attribute_value(a) for a in node.attribute}
            nodes += [
                helper.make_node("Gather", [t_q, node.input[1]], [gathered], node.name, **attributes),
                helper.make_node("DequantizeLinear", [gathered, t_scale, t_zp], [node.output[0]],
                                 f"{node.output[0]}_DequantizeLinear"),
            ]
            gathers += 1
        else:
            nodes.append(node)

    # A float initializer another node still reads stays (none does in MiniLM).
    still_read = {name for node in nodes for name in node.input}
    kept = [init for init in graph.initializer if init.name not in replaced or init.name in still_read]
    del graph.node[:]
    graph.node.extend(nodes)
    del graph.initializer[:]
    graph.initializer.extend(kept + added)
    return QuantizedCounts(matmuls, gathers)


def _int8_per_column(weight: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(int8 weight, float32 scale per column): symmetric, zero point 0."""
    absmax = np.maximum(np.abs(np.minimum(weight.min(axis=0), 0)), np.abs(np.maximum(weight.max(axis=0), 0)))
    # The range is taken in float64 and the scale stored as float32, as onnxruntime does.
    scale64 = 2 * absmax.astype(np.float64) / _INT8_SYMMETRIC_STEPS
    scale = np.where(scale64 < np.finfo(np.float32).tiny, 1.0, scale64).astype(np.float32)
    quantized = np.clip(np.round(weight.astype(np.float32) / scale), -128, 127).astype(np.int8)
    return quantized, scale


def _uint8_per_tensor(table: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(uint8 table, float32 scale, uint8 zero point): one asymmetric range with zero in it."""
    low = min(float(table.min()), 0.0)
    high = max(float(table.max()), 0.0)
    scale64 = (np.float64(high) - np.float64(low)) / _UINT8_STEPS
    if scale64 < np.finfo(np.float32).tiny:
        scale, zero_point = np.float32(1.0), np.uint8(0)
    else:
        scale, zero_point = np.float32(scale64), np.uint8(round(-low / scale64))
    quantized = np.clip(np.round(table.astype(np.float32) / scale) + zero_point.astype(np.float32), 0, 255)
    return quantized.astype(np.uint8), np.array(scale), np.array(zero_point)
