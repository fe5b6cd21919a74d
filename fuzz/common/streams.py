"""Standard output that survives its reader going away.

``fuzz run ... | head -1`` closes the pipe after one line.  The campaign
must still write every case file and exit with the status its findings
give (1), not die on BrokenPipeError or exit 0: once the pipe is closed,
output is discarded (the descriptor is pointed at /dev/null, so the
interpreter's own final flush cannot fail either) and the work goes on.
"""

from __future__ import annotations

import os
from typing import Any, TextIO


class ClosedPipeTolerant:
    """A text stream proxy: writes pass through until the reader closes the pipe, then go nowhere."""

    def __init__(self, stream: TextIO):
        self._stream = stream
        self.closed_pipe = False

    def write(self, text: str) -> int:
        if not self.closed_pipe:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._closed()
        return len(text)

    def flush(self) -> None:
        if not self.closed_pipe:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._closed()

    def _closed(self) -> None:
        self.closed_pipe = True
        try:
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, self._stream.fileno())
            os.close(devnull)
        except (OSError, ValueError, AttributeError):  # not a real descriptor (a test's capture)
            pass

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)
