"""Reading render inputs: formats, ids, bad rows, duplicates, shards (audiopd.batch.inputs)."""

from __future__ import annotations

import io
import json

import pytest

from audiopd.batch.inputs import InputError, id_problem, parse_shard, read_rows, select_shard


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return str(p)


def test_txt_ids_are_line_numbers_and_blank_lines_are_not_rows(tmp_path):
    rows = read_rows(write(tmp_path, "in.txt", "Hello there.\n\n  The cat sat.  \n"))
    assert [(r.id, r.text, r.line, r.error) for r in rows] == [
        ("000001", "Hello there.", 1, None), ("000003", "The cat sat.", 3, None)]


def test_csv_with_optional_columns_and_empty_cells(tmp_path):
    text = "id,text,voice,mode,seed,speed,steps\na,Hello there.,rms,serial,7,1.5,4\nb,The cat sat.,,,,,\n"
    a, b = read_rows(write(tmp_path, "in.csv", text))
    assert (a.id, a.voice, a.mode, a.seed, a.speed, a.steps, a.error) == ("a", "rms", "serial", 7, 1.5, 4, None)
    assert (b.voice, b.mode, b.seed, b.speed, b.steps, b.error) == (None, None, None, None, None, None)


def test_tsv_and_quoted_csv(tmp_path):
    rows = read_rows(write(tmp_path, "in.tsv", "id\ttext\nx\tOne, two, three.\n"))
    assert rows[0].text == "One, two, three."
    rows = read_rows(write(tmp_path, "in.csv", 'id,text\ny,"Yes, she said ""hi""."\n'))
    assert rows[0].text == 'Yes, she said "hi".'


@pytest.mark.parametrize("header", ["text\n", "id,txt\n", "id,text,colour\n", ""])
def test_csv_bad_header_is_a_usage_error(tmp_path, header):
    with pytest.raises(InputError, match="header|empty"):
        read_rows(write(tmp_path, "in.csv", header + "a,Hello.\n"))


def test_jsonl_rows_bad_json_and_bad_fields_become_bad_rows(tmp_path):
    lines = [json.dumps({"id": "a", "text": "Hello there.", "seed": 3}), "{not json",
             json.dumps({"id": "b", "text": "Hi.", "mode": "fast"}), json.dumps({"id": "c", "text": "Hi.", "x": 1}),
             json.dumps({"id": 7, "text": "Seven."}), json.dumps(["a list"]),
             json.dumps({"id": "d", "text": "Hi.", "speed": 9}), json.dumps({"id": "e", "text": "Hi.", "seed": -1})]
    rows = read_rows(write(tmp_path, "in.jsonl", "\n".join(lines) + "\n"))
    assert rows[0].error is None and rows[0].seed == 3
    assert "not JSON" in rows[1].error
    assert "mode" in rows[2].error and "fast" in rows[2].error
    assert "unknown field" in rows[3].error
    assert rows[4].id == "7" and rows[4].error is None  # a number id names the file by its digits
    assert "not an object" in rows[5].error
    assert "speed" in rows[6].error and "seed" in rows[7].error


@pytest.mark.parametrize("bad", ["", "  ", "a/b", "..", ".hidden", "a\\b", "tab\there", "nl\nx", "x" * 201])
def test_unsafe_ids_are_named(bad):
    assert id_problem(bad) is not None


@pytest.mark.parametrize("good", ["a", "utt_001", "ünïcode-ok", "with space", "x" * 200])
def test_safe_ids(good):
    assert id_problem(good) is None


def test_unsafe_id_and_unspeakable_text_are_bad_rows_not_fatal(tmp_path):
    text = "\n".join(json.dumps(r) for r in [{"id": "../evil", "text": "Hello."}, {"id": "ok", "text": "Hello."},
                                             {"id": "sym", "text": "***"}, {"id": "empty", "text": ""}])
    rows = read_rows(write(tmp_path, "in.jsonl", text))
    assert [r.error is None for r in rows] == [False, True, False, False]
    assert rows[0].id == "../evil" and "separator" in rows[0].error


def test_duplicate_ids_are_refused_naming_both_lines(tmp_path):
    with pytest.raises(InputError, match=r"'a' appears twice \(lines 2 and 4\)"):
        read_rows(write(tmp_path, "in.csv", "id,text\na,Hello.\nb,Hi.\na,Again.\n"))


def test_stdin_sniffs_jsonl_or_text(monkeypatch):
    monkeypatch.setattr("sys.stdin", io.StringIO('\n{"id": "q", "text": "Hi there."}\n'))
    assert read_rows("-")[0].id == "q"
    monkeypatch.setattr("sys.stdin", io.StringIO("Hi there.\n"))
    assert read_rows("-")[0].id == "000001"


def test_unknown_suffix_and_missing_file(tmp_path):
    with pytest.raises(InputError, match="suffix"):
        read_rows(write(tmp_path, "in.md", "Hello.\n"))
    with pytest.raises(InputError, match="no such file"):
        read_rows(str(tmp_path / "absent.txt"))


def test_shards_are_disjoint_cover_all_and_deterministic(tmp_path):
    rows = read_rows(write(tmp_path, "in.txt", "".join(f"Sentence {i}.\n" for i in range(23))))
    shards = [select_shard(rows, (i, 4)) for i in range(4)]
    ids = [r.id for s in shards for r in s]
    assert sorted(ids) == sorted(r.id for r in rows) and len(ids) == len(set(ids))
    assert [r.id for r in select_shard(rows, (1, 4))] == [r.id for r in shards[1]]
    assert parse_shard("3/4") == (3, 4)
    for bad in ("4/4", "1", "a/b", "0/0", "-1/3"):
        with pytest.raises(InputError):
            parse_shard(bad)


def test_csv_ragged_lines_are_bad_rows(tmp_path):
    a, b, c = read_rows(write(tmp_path, "in.csv", "id,text\na,Hello.,extra\nb\nc,Fine.\n"))
    assert "more cells" in a.error and a.id == "a"
    assert "fewer cells" in b.error and b.id == "b"
    assert c.error is None
