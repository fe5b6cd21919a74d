"""pytest setup of this repository: the kvrow plugin (``fuzz/pytest_plugin.py``), loaded even when not installed.

Installed (``pip install -e .``), the plugin is already loaded by its
``pytest11`` entry point, which bears the module's name: the line below is
then a no-op, so no option is registered twice. The ``kvrow_profile`` ini
option (pyproject.toml) runs this suite under the ``ci`` profile unless
``HYPOTHESIS_PROFILE``, ``--kvrow-profile`` or ``--hypothesis-profile`` says
otherwise.
"""

pytest_plugins = ["fuzz.pytest_plugin"]


def pytest_addoption(parser):
    # --target: this repository's older spelling of --kvrow-target (the same option; only here, where it clashes
    # with nothing).
    parser.getgroup("kvrow-fuzz").addoption(
        "--target", action="append", dest="kvrow_target", default=None, metavar="SPEC", help="same as --kvrow-target"
    )
