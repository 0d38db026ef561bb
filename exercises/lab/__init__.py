"""The course runtime: a CPU-sized replica of the verl GRPO Wordle recipe, and its NPU launcher.

Importing the package guards ``import torch`` on machines with torch_npu but no CANN (see device.py);
it imports nothing heavy itself.
"""

from exercises.lab.device import guard_torch_import as _guard_torch_import

_guard_torch_import()
