"""Reading manifest files (YAML streams of Kubernetes objects) with errors that name the file."""

from __future__ import annotations

from pathlib import Path

import yaml


class ManifestError(ValueError):
    """A manifest file that cannot be used; the message names the file and the problem."""


def load_manifest(path: Path) -> list[dict]:
    """The objects of a manifest file; empty documents are skipped."""
    try:
        docs = [d for d in yaml.safe_load_all(Path(path).read_text()) if d]
    except yaml.YAMLError as e:
        raise ManifestError(f"{path}: not valid YAML: {e}") from e
    except (OSError, UnicodeDecodeError) as e:
        raise ManifestError(f"{path}: cannot read: {getattr(e, 'strerror', None) or e}") from e
    for i, d in enumerate(docs):
        if not isinstance(d, dict) or not d.get("kind") or not d.get("apiVersion") \
                or not isinstance(d.get("metadata"), dict) or not d["metadata"].get("name"):
            raise ManifestError(f"{path}: document {i + 1} needs apiVersion, kind and metadata.name")
    return docs
