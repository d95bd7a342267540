"""Does an embedder tell a related question from an unrelated one in each language?

response_relevancy compares the questions a judge writes from the response with the user input by
their embeddings' cosine similarity. That only measures relevance where the embedder knows the
language. For each language this prints the mean similarity of three questions to a question of
the same meaning and to an unrelated one; the gap between the two is what the metric can see.

    python scripts/embedder_languages.py                  # the default embedder
    python scripts/embedder_languages.py --embedder DIR   # a sentence-transformers folder

docs/judges.md (B3) records what it printed for the default embedder.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import localeval  # noqa: E402

# per language: (a question, one of the same meaning, an unrelated one), three times
TRIPLES = {
    "en": [("How many days do I have to return the product?", "How long can I return the product for?",
            "Is this phone waterproof?"),
           ("When does the library open on Sundays?", "What are the library's Sunday opening hours?",
            "How much does a parking permit cost?"),
           ("Who wrote the first version of the contract?", "Which person drafted the contract's first version?",
            "Where is the nearest train station?")],
    "de": [("Wie viele Tage habe ich für eine Rückgabe?", "Wie lange kann ich das Produkt zurückgeben?",
            "Ist dieses Telefon wasserdicht?"),
           ("Wann öffnet die Bibliothek am Sonntag?", "Was sind die Öffnungszeiten der Bibliothek am Sonntag?",
            "Wie viel kostet ein Parkausweis?"),
           ("Wer hat die erste Fassung des Vertrags geschrieben?", "Wer verfasste den ersten Entwurf des Vertrags?",
            "Wo ist der nächste Bahnhof?")],
    "zh": [("退货需要多少天？", "可以在几天内退货？", "这款手机防水吗？"),
           ("图书馆星期天几点开门？", "图书馆周日的开放时间是什么？", "停车证多少钱？"),
           ("合同的第一版是谁写的？", "谁起草了合同的初稿？", "最近的火车站在哪里？")],
    "ar": [("كم يوما لدي لإرجاع المنتج؟", "ما هي مدة إرجاع المنتج؟", "هل هذا الهاتف مقاوم للماء؟"),
           ("متى تفتح المكتبة يوم الأحد؟", "ما هي ساعات عمل المكتبة يوم الأحد؟", "كم تكلفة تصريح الوقوف؟"),
           ("من كتب النسخة الأولى من العقد؟", "من صاغ المسودة الأولى للعقد؟", "أين أقرب محطة قطار؟")],
}


def similarities(embedder, triple: tuple[str, str, str]) -> tuple[float, float]:
    """The question's cosine similarity to the one of the same meaning, and to the unrelated one."""
    vectors = np.array(embedder.embed(list(triple)), dtype=np.float64)
    vectors /= np.linalg.norm(vectors, axis=1, keepdims=True)
    return float(vectors[0] @ vectors[1]), float(vectors[0] @ vectors[2])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", help="a registered embedder or a sentence-transformers folder (default: the default)")
    args = parser.parse_args()
    embedder = localeval.load_embedder(args.embedder, device="cpu")
    print("| language | same meaning | unrelated | gap |\n|---|---|---|---|")
    for language, triples in TRIPLES.items():
        same, unrelated = np.mean([similarities(embedder, triple) for triple in triples], axis=0)
        print(f"| {language} | {same:.2f} | {unrelated:.2f} | {same - unrelated:.2f} |")


if __name__ == "__main__":
    main()
