import importlib.util
import sys

from .common.defaults import PROG

# Outside an environment with the tool's dependencies (torch, Hypothesis): one line and exit 2, not a traceback.
_missing = [name for name in ("torch", "hypothesis") if importlib.util.find_spec(name) is None]
if _missing:
    print(
        f"{PROG}: error: {' and '.join(_missing)} not installed for {sys.executable}: run ./kvrow (it sets up .venv), "
        "or pip install torch==2.13.0 --index-url https://download.pytorch.org/whl/cpu and pip install -e .",
        file=sys.stderr,
    )
    sys.exit(2)

from .cli import main  # noqa: E402

sys.exit(main())
