"""benchmarks/tokenizers.py: the paired runs' table and its verdict."""

import csv

from benchmarks import tokenizers


def _row(tokenizer, seed, beams, minutes=15.0, size="8000"):
    return {
        "tokenizer": tokenizer, "seed": str(seed), "minutes": str(minutes),
        "vocabulary_size": size,
        "threads": "1", "bleu_beam4": str(beams), "bleu_greedy": "1.0",
        "bleu_beam4_lowercase": "2.0", "epochs": "30", "kept": "average",
        "source_vocabulary": "8000", "target_vocabulary": "2379",
        "source_tokens_per_sentence": "11.5", "target_tokens_per_sentence": "10.9",
        "wall_minutes": "17.0",
    }  # fmt: skip


def test_each_seed_pairs_its_runs_and_the_verdict_counts_the_gaps():
    rows = [
        _row("wordpiece", 0, 5.0), _row("sentencepiece", 0, 5.5),
        _row("sentencepiece", 1, 4.0), _row("wordpiece", 1, 4.25),
        _row("wordpiece", 2, 3.0), _row("sentencepiece", 2, 4.0),
        _row("wordpiece", 3, 9.0),  # its pair never finished
    ]  # fmt: skip
    table = tokenizers.pairs_table(rows)
    lines = table.splitlines()
    assert "WordPiece (8,000 asked)" in lines[0].split(" | ")[2]
    assert [line.split(" | ")[1] for line in lines[2:5]] == ["0", "1", "2"]
    assert "| 15 | 0 | 5.0, 1.0, 30, 8,000/2,379, 11.5/10.9 |" in table
    assert lines[-1] == (
        "SentencePiece (8,000 asked) against WordPiece (8,000 asked), 4 beams: "
        "3 paired runs, higher in 2, lower in 1; median difference +0.50 BLEU"
    )


def test_a_third_arm_gets_its_own_column_and_verdict():
    rows = [_row("wordpiece", 0, 5.0), _row("sentencepiece", 0, 4.0)]
    rows[0].pop("vocabulary_size")  # A row written before the column.
    rows.append(_row("sentencepiece", 0, 5.75, size="2500"))
    rows += [_row("wordpiece", 1, 3.0), _row("sentencepiece", 1, 3.5)]
    lines = tokenizers.pairs_table(rows).splitlines()
    header = lines[0].split(" | ")
    assert [h.split(":")[0] for h in header[2:]] == [
        "WordPiece (8,000 asked)",
        "SentencePiece (8,000 asked)",
        "SentencePiece (2,500 asked)",
    ]
    assert lines[1] == "|---|---|---|---|---|"
    assert lines[2].startswith("| 15 | 0 | 5.0,")
    assert lines[3].startswith("| 15 | 1 | 3.0,") and lines[3].endswith("| not run |")
    assert lines[-2].startswith("SentencePiece (8,000 asked)")
    assert lines[-2].endswith("lower in 1; median difference -0.25 BLEU")
    assert lines[-1].startswith("SentencePiece (2,500 asked)")
    assert lines[-1].endswith("higher in 1, lower in 0; median difference +0.75 BLEU")


def test_rows_append_under_one_header(tmp_path):
    path = str(tmp_path / "runs.csv")
    tokenizers._append(path, _row("wordpiece", 0, 5.0))
    tokenizers._append(path, _row("sentencepiece", 0, 6.0))
    with open(path) as f:
        rows = list(csv.DictReader(f))
    assert [r["tokenizer"] for r in rows] == ["wordpiece", "sentencepiece"]
    assert rows[1]["bleu_beam4"] == "6.0"
