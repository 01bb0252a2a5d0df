"""One helper the benchmark scripts share: a Python file loaded as a module by its path."""

import importlib.util
import sys
from pathlib import Path


def load(name: str, path: Path):
    """The module at path, registered in sys.modules as name (the validator, or another bench script)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
