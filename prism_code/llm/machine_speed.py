"""How fast this machine runs a model: prefill and decode speed, measured once and kept.

Latency targets are seconds on "2 cores", but two 2-core hosts differ (the same build
prefilled 220 tokens/s on one and 95 on another). The benchmarks state the speed they ran
at beside every model figure, and the server's completion model policy
(tasks/model_policy.py) predicts its latencies from it. Measuring means loading the model
(~1 GB for the 1.5B), so a measurement is kept per host, model and thread count: another
CPU, another model file, another llama.cpp build or another thread count measures again.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import json
import logging
import platform
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import prism_code
from prism_code.atomic import atomic_write
from prism_code.cancel import CancelCheck, Cancelled
from prism_code.llm.cpu_load import cores

if TYPE_CHECKING:  # the runtime loads llama.cpp; measuring needs an open session anyway
    from prism_code.llm.runtime import LlamaSession

log = logging.getLogger(__name__)

# Fixed text, so every run measures the same tokens: the library's own source.
_SAMPLE = Path(prism_code.__file__).resolve().parent / "tasks" / "find_prism.py"


@dataclass(frozen=True)
class MachineSpeed:
    prefill_tokens_per_s: float
    decode_ms_per_token: float
    threads: int

    def sentence(self) -> str:
        return (f"Machine speed with this model ({self.threads} thread(s), measured just before the run): "
                f"prefill {self.prefill_tokens_per_s:.0f} tokens/s, decode {self.decode_ms_per_token:.0f} ms/token.")


def measure(session: LlamaSession, prefill_tokens: int = 256, decode_tokens: int = 32,
            cancelled: CancelCheck | None = None) -> MachineSpeed:
    """Prefill a fixed text from an empty cache, then decode greedily; the cache is left empty.

    Raises Cancelled when `cancelled()` turns true between prefill batches or decoded tokens.
    """
    tokens = session.tokenize_text(_SAMPLE.read_text())[:prefill_tokens]
    session.reset()
    try:
        started = time.perf_counter()
        pre = session.prefill(tokens, cancelled=cancelled)
        prefill_s = time.perf_counter() - started
        gen = None if pre.cancelled else session.generate(tokens, max_tokens=decode_tokens,
                                                            temperature=0.0, cancelled=cancelled)
    finally:
        session.reset()
    if gen is None or gen.stats.finish_reason == "cancelled":
        raise Cancelled("measuring the machine's speed was interrupted")
    per_token = gen.stats.decode_ms / max(gen.stats.decoded, 1)
    return MachineSpeed(len(tokens) / prefill_s, per_token, session.n_threads)


@dataclass(frozen=True)
class HostKey:
    """What a measured speed holds for: the same CPU, model file, llama.cpp and threads."""

    cpu: str
    cores: int
    model_sha256: str
    llama_cpp: str
    threads: int

    def file_name(self) -> str:
        text = json.dumps(asdict(self), sort_keys=True)
        return hashlib.sha256(text.encode()).hexdigest()[:24] + ".json"


def host_key(model_sha256: str, threads: int) -> HostKey:
    try:
        build = importlib.metadata.version("llama_cpp_python")
    except importlib.metadata.PackageNotFoundError:
        build = "unknown"
    return HostKey(cpu_name(), cores(), model_sha256, build, threads)


def cpu_name() -> str:
    """The CPU's model name (Linux reads /proc/cpuinfo; elsewhere what platform says)."""
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


class SpeedCache:
    """Measured speeds on disk, one small JSON file per HostKey."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def path(self, key: HostKey) -> Path:
        return self.root / key.file_name()

    def get(self, key: HostKey) -> MachineSpeed | None:
        try:
            record = json.loads(self.path(key).read_text())
            if record["key"] != asdict(key):  # a hash collision, however unlikely, is not this host
                return None
            return MachineSpeed(**record["speed"])
        except (OSError, ValueError, KeyError, TypeError):
            return None

    def put(self, key: HostKey, speed: MachineSpeed) -> None:
        record: dict[str, Any] = {"key": asdict(key), "speed": asdict(speed), "measured": time.time()}
        self.root.mkdir(parents=True, exist_ok=True)
        atomic_write(self.path(key), [json.dumps(record, indent=1).encode()])


def measured_speed(cache: SpeedCache, key: HostKey, open_session: Callable[[], LlamaSession],
                   cancelled: CancelCheck | None = None) -> MachineSpeed:
    """The speed kept for `key`, else measured on a session `open_session` opens (and this
    closes again) with `key.threads` threads, and kept. Raises Cancelled as `measure` does."""
    known = cache.get(key)
    if known is not None:
        return known
    session = open_session()
    try:
        speed = measure(session, cancelled=cancelled)
    finally:
        session.close()
    cache.put(key, speed)
    log.info("measured %s: %s", key.model_sha256[:12], speed.sentence())
    return speed
