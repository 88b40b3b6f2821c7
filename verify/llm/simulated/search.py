"""A deterministic offline search over a small built-in corpus of encyclopedic snippets."""

from __future__ import annotations

import math
import re
from collections import Counter
from collections.abc import Sequence

from verify.errors import SearchError
from verify.llm.ports import SearchHit

CORPUS: tuple[tuple[str, str], ...] = (
    ("Paris", "Paris is the capital and most populous city of France."),
    ("Berlin", "Berlin is the capital and largest city of Germany."),
    ("Rome", "Rome is the capital city of Italy."),
    ("Madrid", "Madrid is the capital and largest city of Spain."),
    ("Tokyo", "Tokyo is the capital of Japan."),
    ("Canberra", "Canberra is the capital city of Australia; Sydney is its largest city."),
    ("Ottawa", "Ottawa is the capital city of Canada."),
    ("Brasilia", "Brasilia is the federal capital of Brazil."),
    ("Water", "Water boils at 100 degrees Celsius (212 degrees Fahrenheit) at sea-level pressure."),
    ("Water", "Water freezes at 0 degrees Celsius (32 degrees Fahrenheit) at standard pressure."),
    ("Water", "A water molecule (H2O) consists of two hydrogen atoms bonded to one oxygen atom."),
    ("Ethanol", "Ethanol boils at about 78 degrees Celsius at standard pressure."),
    ("BCL2", "BCL2 (B-cell lymphoma 2) is an anti-apoptotic protein that inhibits programmed cell death."),
    ("BCL2", "The BCL2 gene is located on chromosome 18 and is often translocated in follicular lymphoma."),
    ("Apoptosis", "Apoptosis is a form of programmed cell death executed by caspases."),
    (
        "Apoptosis",
        "BAX and BAK are pro-apoptotic BCL2-family proteins that permeabilise the mitochondrial outer membrane.",
    ),
    ("TP53", "TP53 encodes the tumour suppressor protein p53, often called the guardian of the genome."),
    ("DNA", "DNA is a double helix made of the four bases adenine, thymine, guanine and cytosine."),
    ("Mitochondria", "Mitochondria produce most of the cell's ATP through oxidative phosphorylation."),
    (
        "Photosynthesis",
        "Photosynthesis converts carbon dioxide and water into glucose and oxygen using light energy.",
    ),
    ("Insulin", "Insulin is a peptide hormone made by beta cells of the pancreas that lowers blood glucose."),
    ("Hemoglobin", "Hemoglobin is the iron-containing protein in red blood cells that carries oxygen."),
    ("Human body", "An adult human has 206 bones."),
    ("Gold", "Gold has the chemical symbol Au and atomic number 79."),
    ("Iron", "Iron has the chemical symbol Fe and atomic number 26."),
    ("Sodium chloride", "Sodium chloride (NaCl) is common table salt."),
    ("Carbon", "Carbon has atomic number 6; diamond and graphite are allotropes of carbon."),
    ("Oxygen", "Oxygen has atomic number 8 and makes up about 21 percent of Earth's atmosphere."),
    ("Nitrogen", "Nitrogen makes up about 78 percent of Earth's atmosphere by volume."),
    ("Speed of light", "The speed of light in vacuum is exactly 299,792,458 metres per second."),
    (
        "Gravity",
        "Standard gravitational acceleration at Earth's surface is 9.80665 metres per second squared.",
    ),
    ("Planck constant", "The Planck constant is exactly 6.62607015e-34 joule seconds."),
    ("Avogadro constant", "The Avogadro constant is exactly 6.02214076e23 per mole."),
    ("Absolute zero", "Absolute zero is 0 kelvin, or -273.15 degrees Celsius."),
    ("Relativity", "Albert Einstein published the special theory of relativity in 1905."),
    ("Penicillin", "Alexander Fleming discovered penicillin in 1928."),
    ("Evolution", "Charles Darwin published On the Origin of Species in 1859."),
    ("Moon landing", "Apollo 11 landed the first humans on the Moon on 20 July 1969."),
    ("World War II", "World War II lasted from 1939 to 1945."),
    ("Berlin Wall", "The Berlin Wall fell on 9 November 1989."),
    ("French Revolution", "The French Revolution began in 1789 with the storming of the Bastille."),
    ("Columbus", "Christopher Columbus reached the Americas in 1492."),
    ("Magna Carta", "The Magna Carta was sealed by King John of England in 1215."),
    ("Solar System", "Jupiter is the largest planet in the Solar System."),
    ("Solar System", "Mercury is the planet closest to the Sun."),
    ("Earth", "The Earth orbits the Sun once every 365.25 days, about one year."),
    ("Mount Everest", "Mount Everest is Earth's highest mountain above sea level, at 8,849 metres."),
    ("Nile", "The Nile is one of the longest rivers in the world, flowing into the Mediterranean Sea."),
    ("Pacific Ocean", "The Pacific Ocean is the largest and deepest of Earth's oceans."),
    ("Shakespeare", "William Shakespeare wrote Hamlet, Macbeth and Romeo and Juliet."),
    ("Mathematics", "Pi is the ratio of a circle's circumference to its diameter, about 3.14159."),
    ("Mathematics", "A prime number has exactly two divisors: 1 and itself; 2 is the only even prime."),
)

_STOPWORDS = frozenset(
    {
        "a",
        "an",
        "and",
        "are",
        "as",
        "at",
        "be",
        "by",
        "for",
        "from",
        "has",
        "have",
        "in",
        "is",
        "it",
        "its",
        "of",
        "on",
        "or",
        "that",
        "the",
        "this",
        "to",
        "was",
        "were",
        "what",
        "which",
        "who",
        "with",
        "does",
        "do",
        "did",
        "how",
        "many",
        "much",
        "when",
        "where",
        "why",
    }
)
_TOKEN = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)*")


def _tokens(text: str) -> list[str]:
    return [t for t in _TOKEN.findall(text.lower()) if t not in _STOPWORDS and (len(t) > 1 or t.isdigit())]


class SimulatedSearch:
    """The Search port over ``corpus`` (default :data:`CORPUS`): top-k snippets by weighted token overlap.

    Ties keep corpus order, so results are deterministic. ``fail=True`` makes every call raise
    :class:`SearchError`. ``calls`` counts calls and ``queries`` records them.
    """

    def __init__(
        self, *, k: int = 3, fail: bool = False, corpus: Sequence[tuple[str, str]] | None = None
    ) -> None:
        self.k = k
        self.fail = fail
        self.corpus = tuple(corpus if corpus is not None else CORPUS)
        self.calls = 0
        self.queries: list[str] = []
        self._docs = [Counter(_tokens(f"{title} {text}")) for title, text in self.corpus]
        df: Counter[str] = Counter()
        for doc in self._docs:
            df.update(doc.keys())
        n = len(self._docs)
        self._idf = {term: math.log(1 + n / count) for term, count in df.items()}

    async def search(self, query: str) -> list[SearchHit]:
        self.calls += 1
        self.queries.append(query)
        if self.fail:
            raise SearchError("simulated search failure (SimulatedSearch(fail=True))")
        terms = set(_tokens(query))
        scored = []
        for index, doc in enumerate(self._docs):
            score = sum(self._idf[t] for t in terms if t in doc)
            if score > 0:
                scored.append((-score, index))
        scored.sort()
        hits = []
        for _, index in scored[: self.k]:
            title, text = self.corpus[index]
            hits.append(SearchHit(content=text, title=title, url=f"simulated://corpus/{index}"))
        return hits
