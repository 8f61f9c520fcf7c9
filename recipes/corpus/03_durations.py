"""Stage 03: per-token durations for audiopd's frontend tokens, from flite's own segment times.

flite knows where each of its phones lies in the waveform it rendered (``-psdur``, stage 02), but
its phone sequence is not audiopd's: no stress, ``pau`` for silence, ``ax``/``axr`` for reduced
vowels, and its own pronunciation choices. We align the two sequences by dynamic programming on
base phones (edit distance with typed costs), then move flite's times onto the frontend tokens, so
the durations of an utterance sum to its audio length. This is the "external aligner" of
FastSpeech 2 (Ren et al., 2021, sec. 2.2), with flite's segmentation in place of MFA.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

import soundfile as sf

sys.path.insert(0, str(Path(__file__).resolve().parent))
import corpus_common as cc  # noqa: E402

STAGE = "03"
SILENCE_TOKENS = frozenset({"^", "$", "_", ",", ".", "?", "!", ";", ":"})
# flite (cmulex) phones that are not spelled like their ARPAbet counterpart.
FLITE_TO_ARPABET = {"ax": "AH", "axr": "ER", "pau": "pau"}
VOWELS = frozenset({"AA", "AE", "AH", "AO", "AW", "AY", "EH", "ER", "EY", "IH", "IY", "OW", "OY", "UH", "UW"})
INF = float("inf")

# Edit costs. A same-class substitution (vowel for vowel: "the" as DH AH vs DH IY) is cheaper than
# dropping and inserting, and cheaper than a vowel/consonant swap, so variants align phone-to-phone.
COST_SUB_VOWEL, COST_SUB_CONS, COST_SUB_CROSS = 0.6, 1.1, 1.9
COST_DEL_PHONE, COST_INS_PHONE = 1.0, 1.0
COST_INS_PAU = 0.5          # a flite pause where the frontend has no boundary token: merged into a neighbour
COST_WORD_PAU = 0.1         # "_" may take a flite pause, but punctuation is the likelier owner
COST_SKIP_EDGE = 2.0        # ^ and $ nearly always own flite's leading and trailing pau


def flite_base(phone: str) -> str:
    """flite phone -> ARPAbet base phone (upper case, no stress); ``pau`` stays ``pau``."""
    return FLITE_TO_ARPABET.get(phone, phone.upper())


def token_base(token: str) -> str:
    """Frontend token -> base phone (stress dropped); specials unchanged."""
    return token[:-1] if token[-1:] in "012" and token[:-1] in VOWELS else token


def _pair_cost(token: str, seg: str) -> float:
    if token in SILENCE_TOKENS:
        if seg != "pau":
            return INF
        return COST_WORD_PAU if token == "_" else 0.0
    if seg == "pau":
        return INF
    a, b = token_base(token), seg
    if a == b:
        return 0.0
    if a in VOWELS and b in VOWELS:
        return COST_SUB_VOWEL
    if a not in VOWELS and b not in VOWELS:
        return COST_SUB_CONS
    return COST_SUB_CROSS


def _skip_token_cost(token: str) -> float:
    if token in ("^", "$"):
        return COST_SKIP_EDGE
    return 0.0 if token in SILENCE_TOKENS else COST_DEL_PHONE


def _skip_seg_cost(seg: str) -> float:
    return COST_INS_PAU if seg == "pau" else COST_INS_PHONE


def align(tokens: Sequence[str], segs: Sequence[str]) -> list[tuple[int | None, int | None]]:
    """Minimum-cost alignment path of frontend tokens and flite base phones.

    Returns pairs (token index or None, segment index or None) in order: (i, j) a pairing, (i, None)
    a token without segment, (None, j) a segment without token.
    """
    n, m = len(tokens), len(segs)
    cost = [[INF] * (m + 1) for _ in range(n + 1)]
    back = [[0] * (m + 1) for _ in range(n + 1)]  # 1 diagonal, 2 token skip, 3 segment skip
    cost[0][0] = 0.0
    skip_tok = [_skip_token_cost(t) for t in tokens]
    skip_seg = [_skip_seg_cost(s) for s in segs]
    for i in range(n + 1):
        row, prev = cost[i], cost[i - 1] if i else None
        for j in range(m + 1):
            if i == 0 and j == 0:
                continue
            best, move = INF, 0
            if i and j:
                c = prev[j - 1] + _pair_cost(tokens[i - 1], segs[j - 1])
                if c < best:
                    best, move = c, 1
            if i:
                c = prev[j] + skip_tok[i - 1]
                if c < best:
                    best, move = c, 2
            if j:
                c = row[j - 1] + skip_seg[j - 1]
                if c < best:
                    best, move = c, 3
            row[j], back[i][j] = best, move
    path: list[tuple[int | None, int | None]] = []
    i, j = n, m
    while i or j:
        move = back[i][j]
        if move == 1:
            path.append((i - 1, j - 1))
            i, j = i - 1, j - 1
        elif move == 2:
            path.append((i - 1, None))
            i -= 1
        else:
            path.append((None, j - 1))
            j -= 1
    path.reverse()
    return path


@dataclass(frozen=True)
class Durations:
    tokens: tuple[str, ...]
    durations_s: tuple[float, ...]
    match_rate: float        # frontend phones paired with the identical flite base phone / all phones
    substitutions: int
    deletions: int           # frontend phones flite did not say
    insertions: int          # flite phones the frontend does not have


def token_durations(tokens: Sequence[str], phones: Sequence[tuple[str, float, float]],
                    audio_seconds: float) -> Durations:
    """Give every frontend token a duration so they sum to ``audio_seconds``.

    Times are first fitted to the audio length. flite's ``kal16`` diphone voice reports its last
    segment ending 110-125 ms past its waveform (every one of its 3,600 corpus utterances), while its
    final pause is reported as 220 ms and its speech stops where flite says its last phone ends
    (energy offset, 40 utterances: median 14 ms before). So the waveform lacks the end of the final
    pause, and an overshoot that the trailing pause can absorb is cut from the end: every other
    boundary keeps flite's time. Only a larger overshoot (never seen) scales all times. A shortfall
    goes to ``$`` (trailing silence). A flite segment without a token goes to a neighbouring token of its
    kind; a frontend phone flite did not say shares its neighbour phone's time (a variant
    pronunciation still occupies that stretch of audio); "_" and punctuation may keep 0 s.
    """
    if not tokens:
        raise ValueError("no tokens to align")
    if not phones:
        raise ValueError("no flite segments to align")
    seg_dur = _fit_to_audio(phones, audio_seconds)
    segs = [flite_base(p) for p, _, _ in phones]
    path = align(tokens, segs)
    dur = [0.0] * len(tokens)
    matched: dict[int, int] = {}
    subs = dels = ins = 0
    is_phone = [t not in SILENCE_TOKENS for t in tokens]
    # Position on the path: the last token consumed before each step, and the next one after it.
    consumed = -1
    next_token = [None] * len(path)
    upcoming = None
    for k in range(len(path) - 1, -1, -1):
        if path[k][0] is not None:
            upcoming = path[k][0]
        next_token[k] = upcoming
    for k, (i, j) in enumerate(path):
        if i is not None and j is not None:
            dur[i] += seg_dur[j]
            matched[i] = j
            if is_phone[i] and token_base(tokens[i]) != segs[j]:
                subs += 1
            consumed = i
        elif i is not None:
            consumed = i
            if is_phone[i]:
                dels += 1
        else:
            if segs[j] != "pau":
                ins += 1
            dur[_owner_of_extra(segs[j] == "pau", consumed, next_token[k], is_phone)] += seg_dur[j]
    _share_with_neighbours(tokens, dur, matched, is_phone)
    total = sum(dur)
    dur[-1] += max(0.0, audio_seconds - total)  # flite stopped short: trailing silence ("$")
    n_phones = sum(is_phone)
    same = sum(1 for i, j in matched.items() if is_phone[i] and token_base(tokens[i]) == segs[j])
    return Durations(tuple(tokens), tuple(round(d, 5) for d in dur),
                     round(same / n_phones, 4) if n_phones else 1.0, subs, dels, ins)


def _fit_to_audio(phones: Sequence[tuple[str, float, float]], audio_seconds: float) -> list[float]:
    """Segment durations that end at the audio's end when flite overshoots it (see token_durations).

    Before a256d5d (2026-12-01) every overshoot was scaled away. For kal16 that moved each boundary earlier by
    3 % of its time, ~95 ms at the end of a 4 s sentence, so the phonemes that conditioned its last
    words sat a phoneme or so ahead of the audio they were trained to produce.
    """
    trailing = 0.0
    for p, s, e in reversed(phones):
        if p != "pau":
            break
        trailing += e - s
    last = phones[-1][2]
    if last - audio_seconds <= trailing:  # also no overshoot at all: clipping at the audio's end changes nothing
        return [max(0.0, min(e, audio_seconds) - min(s, audio_seconds)) for _, s, e in phones]
    scale = audio_seconds / last
    return [max(0.0, (e - s) * scale) for _, s, e in phones]


def _owner_of_extra(is_pau: bool, prev: int, nxt: int | None, is_phone: list[bool]) -> int:
    """Token that absorbs an unpaired flite segment: a pause prefers a silence token, a phone a phone."""
    candidates = [c for c in (prev, nxt) if c is not None and c >= 0]
    for c in candidates:
        if is_phone[c] != is_pau:
            return c
    return candidates[0] if candidates else 0


def _share_with_neighbours(tokens: Sequence[str], dur: list[float], matched: dict[int, int],
                           is_phone: list[bool]) -> None:
    """Split a neighbour phone's time equally with the frontend phones that flite did not say."""
    groups: dict[int, list[int]] = {}
    for i, phone in enumerate(is_phone):
        if not phone or i in matched:
            continue
        partner = None
        for c in (i - 1, i + 1, i - 2, i + 2):  # same word first: boundaries sit between words
            if 0 <= c < len(tokens) and is_phone[c] and c in matched:
                if all(is_phone[x] for x in range(min(i, c), max(i, c) + 1)):
                    partner = c
                    break
        if partner is not None:
            groups.setdefault(partner, []).append(i)
    for partner, orphans in groups.items():
        share = dur[partner] / (1 + len(orphans))
        for x in [partner, *orphans]:
            dur[x] = share


def load_phonemize():
    """audiopd's frontend, imported lazily so the alignment DP can be tested without loading it."""
    from audiopd.text import phonemize  # noqa: PLC0415

    return phonemize


def frontend_tokens(phonemize, text: str) -> list[str]:
    result = phonemize(text)
    tokens = getattr(result, "tokens", result)
    return [str(t) for t in tokens]


def _align_item(args: tuple) -> dict:
    """Worker: one utterance -> one durations.jsonl row (top-level so a process pool can pickle it)."""
    data, row, tokens = args
    phones = cc.read_phones(Path(data) / row["phones"])
    result = token_durations(tokens, phones, float(row["seconds"]))
    return {"id": row["id"], "voice": row["voice"], "split": row["split"], "tokens": list(result.tokens),
            "durations_s": list(result.durations_s), "match_rate": result.match_rate,
            "substitutions": result.substitutions, "deletions": result.deletions,
            "insertions": result.insertions, "flite_end_s": phones[-1][2]}



def summarise(rows: list[dict]) -> dict:
    """Per-voice match rate and edit counts, for the README and the done-marker."""
    out = {}
    for voice in sorted({r["voice"] for r in rows}):
        vr = [r for r in rows if r["voice"] == voice]
        phones = sum(sum(1 for t in r["tokens"] if t not in SILENCE_TOKENS) for r in vr)
        same = sum(r["match_rate"] * sum(1 for t in r["tokens"] if t not in SILENCE_TOKENS) for r in vr)
        out[voice] = {"utterances": len(vr), "phone_match_rate": round(same / max(phones, 1), 4),
                      "substitutions": sum(r["substitutions"] for r in vr),
                      "deletions": sum(r["deletions"] for r in vr),
                      "insertions": sum(r["insertions"] for r in vr),
                      "perfect_utterances": sum(1 for r in vr if r["match_rate"] == 1.0)}
    return out


def run(data: str | Path, jobs: int) -> dict:
    """Align every manifest utterance. Per-voice parts are written as they finish, so a rerun resumes."""
    from multiprocessing import Pool  # noqa: PLC0415

    manifest = cc.corpus_dir(data) / "manifest.jsonl"
    if not manifest.is_file() or not cc.is_done(data, "02"):
        raise SystemExit(f"{manifest} is missing or stage 02 is not done: run 02_render.py first")
    rows = list(cc.read_jsonl(manifest))
    phonemize = load_phonemize()
    tokens_of: dict[str, list[str]] = {}
    for row in rows:
        if row["id"] not in tokens_of:
            tokens_of[row["id"]] = frontend_tokens(phonemize, row["text"])
    parts_dir = cc.corpus_dir(data) / "durations"
    all_rows: list[dict] = []
    for voice in sorted({r["voice"] for r in rows}, key=lambda v: cc.VOICES.index(v) if v in cc.VOICES else 99):
        part = parts_dir / f"{voice}.jsonl"
        if not part.is_file():
            items = [(str(data), r, tokens_of[r["id"]]) for r in rows if r["voice"] == voice]
            with Pool(jobs) as pool:
                out = pool.map(_align_item, items, chunksize=32)
            cc.write_jsonl(part, out)
            print(f"  {voice}: {len(out)} utterances aligned", flush=True)
        all_rows.extend(cc.read_jsonl(part))
    cc.write_jsonl(cc.corpus_dir(data) / "durations.jsonl", all_rows)
    return {"utterances": len(all_rows), "voices": summarise(all_rows)}


def main(argv: list[str] | None = None) -> int:
    def extra(p):
        p.add_argument("--jobs", type=int, default=2, help="worker processes")
    args = cc.stage_args(__doc__.splitlines()[0], argv, extra)
    if cc.is_done(args.data, STAGE) and not args.force:
        print(f"stage {STAGE} already done ({cc.done_marker(args.data, STAGE)}); use --force to redo")
        return 0
    if args.force:
        for part in (cc.corpus_dir(args.data) / "durations").glob("*.jsonl"):
            part.unlink()
    timer = cc.Timer()
    info = run(args.data, max(1, args.jobs))
    info["seconds"] = timer.seconds
    cc.mark_done(args.data, STAGE, info)
    for voice, stats in info["voices"].items():
        print(f"{voice}: {stats}")
    print(f"wrote {cc.corpus_dir(args.data) / 'durations.jsonl'}: {info['utterances']} utterances in {timer.seconds} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
