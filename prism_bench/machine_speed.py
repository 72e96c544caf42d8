"""How fast this machine runs the model, stated beside every model benchmark.

The measurement lives in the library (prism_code/llm/machine_speed.py) since the server's
completion model policy predicts its latencies from the same figures; the benchmarks
import it from here.
"""

from prism_code.llm.machine_speed import MachineSpeed, measure

__all__ = ["MachineSpeed", "measure"]
