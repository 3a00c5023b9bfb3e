"""The Chroma server backend (`chroma_url`): Chroma's HTTP client, embeddings stay on the client side."""

from __future__ import annotations

from typing import Any
from urllib.parse import urlparse

from .errors import ConfigError, StoreError


def make_http_client(config, settings) -> Any:
    import chromadb

    url = urlparse(config.chroma_url)
    if url.scheme not in ("http", "https") or not url.hostname:
        raise ConfigError(f"automem.chroma_url={config.chroma_url!r}: expected http(s)://host:port")
    headers = {}
    if config.chroma_token:
        header = config.chroma_auth_header or "Authorization"
        value = config.chroma_token
        if header.lower() == "authorization" and not value.lower().startswith(("bearer ", "basic ")):
            value = f"Bearer {value}"
        headers[header] = value
    try:
        return chromadb.HttpClient(host=url.hostname, port=url.port or (443 if url.scheme == "https" else 8000),
                                   ssl=url.scheme == "https", headers=headers or None, settings=settings,
                                   tenant=config.chroma_tenant, database=config.chroma_database)
    except Exception as exc:
        raise StoreError(f"cannot reach the Chroma server at {config.chroma_url}: {exc}") from None
