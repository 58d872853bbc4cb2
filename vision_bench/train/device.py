"""Where training runs and how: device choice, mixed precision, memory layout and compilation.

`device: auto` picks CUDA, then Apple MPS, then CPU. Speed-ups that only pay off (or only work)
on CUDA -- bf16/fp16 autocast, channels_last, torch.compile -- are switched off elsewhere, and
the run's log says so, so a config written for a GPU still runs unchanged on a laptop.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TypeVar

import torch
from torch import nn

from vision_bench.errors import ConfigError

ModuleT = TypeVar("ModuleT", bound=nn.Module)
AUTOCAST_DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


@dataclass(frozen=True)
class Runtime:
    """The resolved execution settings of one process."""

    device: torch.device
    precision: str
    channels_last: bool
    compile: bool
    notes: tuple[str, ...] = ()

    @property
    def autocast_dtype(self) -> torch.dtype | None:
        return AUTOCAST_DTYPES.get(self.precision)

    @property
    def uses_grad_scaler(self) -> bool:
        return self.precision == "fp16"


def resolve_device(name: str, local_rank: int = 0, setting: str = "runtime.device") -> torch.device:
    """`auto` -> cuda:LOCAL_RANK, else mps, else cpu; an explicit name must be available here.

    The one device check of every command that runs a model: the name parses, its backend exists,
    and a CUDA index is below the device count. `setting` names the option in error messages.
    """
    if name == "auto":
        if torch.cuda.is_available():
            return torch.device("cuda", local_rank % torch.cuda.device_count())
        if torch.backends.mps.is_available():
            return torch.device("mps")
        return torch.device("cpu")
    try:
        device = torch.device(name)
    except RuntimeError:
        raise ConfigError(f"{setting}: {name!r} is not a device; use auto, cpu, cuda, cuda:N or mps") from None
    if device.type == "cuda":
        if not torch.cuda.is_available():
            raise ConfigError(f"{setting}: {name} was requested but CUDA is not available here; use auto or cpu")
        count = torch.cuda.device_count()
        if device.index is None:
            device = torch.device("cuda", local_rank % count)
        elif device.index >= count:
            raise ConfigError(f"{setting}: {name} does not exist; this machine has {count} CUDA device(s), "
                              f"cuda:0 to cuda:{count - 1}")
    elif device.type == "mps" and not torch.backends.mps.is_available():
        raise ConfigError(f"{setting}: mps was requested but MPS is not available here; use auto or cpu")
    elif device.type not in ("cpu", "mps"):
        raise ConfigError(f"{setting}: {name!r} is not supported; use auto, cpu, cuda, cuda:N or mps")
    return device


def resolve_runtime(
    device_name: str, precision: str, channels_last: bool, compile_model: bool, local_rank: int = 0
) -> Runtime:
    """Resolve the device and drop the CUDA-only options elsewhere, recording why in `notes`."""
    device = resolve_device(device_name, local_rank)
    notes = []
    on_cuda = device.type == "cuda"
    if precision != "fp32" and not on_cuda:
        notes.append(f"precision {precision} needs CUDA; training in fp32 on {device.type}")
        precision = "fp32"
    if precision == "bf16" and on_cuda and not torch.cuda.is_bf16_supported():
        notes.append("this GPU has no bf16 support; training in fp32")
        precision = "fp32"
    if compile_model and not on_cuda:
        notes.append(f"torch.compile is used on CUDA only; running eagerly on {device.type}")
        compile_model = False
    return Runtime(device, precision, channels_last and on_cuda, compile_model, tuple(notes))


def prepare_model(model: ModuleT, runtime: Runtime) -> ModuleT:
    """Move the model to the device, in channels_last layout when that is enabled."""
    model = model.to(runtime.device)
    if runtime.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


@contextlib.contextmanager
def autocast(runtime: Runtime) -> Iterator[None]:
    """Mixed-precision autocast for the forward pass when the run uses bf16 or fp16, else nothing."""
    dtype = runtime.autocast_dtype
    if dtype is None:
        yield
        return
    with torch.autocast(device_type=runtime.device.type, dtype=dtype):
        yield
