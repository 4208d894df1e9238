"""Lucene-style BM25 search over product documents, as WebShop's pyserini index builds them."""

from __future__ import annotations

import math
import re
from collections import defaultdict

SEARCH_RETURN_N = 50  # results a search returns (WebShop's top 50)
LUCENE_STOPWORDS = frozenset("""a an and are as at be but by for if in into is it no not of on or such that the
their then there these they this to was will with""".split())
_TOKEN_RE = re.compile(r"[a-z0-9]+(?:['.][a-z0-9]+)*")


def _minimal_stem(word: str) -> str:
    """Lucene's EnglishMinimalStemmer (plural 's' removal)."""
    n = len(word)
    if n < 3 or word[-1] != "s":
        return word
    second_last = word[-2]
    if second_last in "us":
        return word
    if second_last == "e":
        if n > 3 and word[-3] == "i" and word[-4] not in "ae":
            return word[:-3] + "y"
        if word[-3] in "iaoe":
            return word
    return word[:-1]


def analyze(text: str) -> list[str]:
    """Lowercase, tokenize, drop possessive 's and stopwords, stem plurals."""
    terms = []
    for token in _TOKEN_RE.findall(text.lower()):
        if token.endswith("'s"):
            token = token[:-2]
        if token and token not in LUCENE_STOPWORDS:
            terms.append(_minimal_stem(token))
    return terms


class BM25Index:
    """Inverted index with precomputed per-posting BM25 weights; `search` returns document ids."""

    def __init__(self, documents: list[str], k1: float = 0.9, b: float = 0.4):
        self.k1, self.b = k1, b
        analyzed = [analyze(doc) for doc in documents]
        self.num_docs = len(documents)
        avgdl = sum(len(terms) for terms in analyzed) / max(1, self.num_docs)
        term_freqs: dict[str, dict[int, int]] = defaultdict(dict)
        for doc_id, terms in enumerate(analyzed):
            for term in terms:
                term_freqs[term][doc_id] = term_freqs[term].get(doc_id, 0) + 1
        self.postings: dict[str, tuple[tuple[int, float], ...]] = {}
        for term, docs in term_freqs.items():
            idf = math.log(1 + (self.num_docs - len(docs) + 0.5) / (len(docs) + 0.5))
            self.postings[term] = tuple(
                (doc_id, idf * tf / (tf + k1 * (1 - b + b * len(analyzed[doc_id]) / avgdl)))
                for doc_id, tf in sorted(docs.items()))

    def search(self, query: str, k: int = SEARCH_RETURN_N) -> list[int]:
        scores: dict[int, float] = {}
        for term in analyze(query):  # repeated query terms count again, as Lucene's SHOULD clauses
            for doc_id, weight in self.postings.get(term, ()):
                scores[doc_id] = scores.get(doc_id, 0.0) + weight
        ranked = sorted(scores.items(), key=lambda item: (-item[1], item[0]))
        return [doc_id for doc_id, score in ranked[:k] if score > 0]


def product_document(product: dict) -> str:
    """Indexed text, as WebShop's search_engine/convert_product_file_format.py builds it."""
    option_text = ", and ".join(f"{name}: {', '.join(values)}" for name, values in product.get("options", {}).items())
    bullets = product.get("BulletPoints") or [""]
    return " ".join([product.get("Title", ""), product.get("Description", ""), bullets[0], option_text]).lower()
