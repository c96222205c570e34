"""Where ``../shared/corpus`` is: beside the clone (or beside a worktree's parent). Tests that read
it are skipped when it is absent (`needs_corpus`)."""

from __future__ import annotations

from pathlib import Path

import pytest

CORPUS = next(
    (
        folder / "shared" / "corpus"
        for folder in Path(__file__).resolve().parents
        if (folder / "shared" / "corpus").is_dir()
    ),
    Path("/nonexistent"),
)
# The development set: real outputs of SmolLM2, labelled (corpus/model/README.md).
DEVELOPMENT_SET = CORPUS / "model" / "outputs.jsonl"

needs_corpus = pytest.mark.skipif(
    not CORPUS.is_dir(), reason="../shared/corpus is not beside the repo"
)
