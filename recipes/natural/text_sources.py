"""Offline sentence sources beyond fortunes: questions, exclamations, numbers/dates/money, names, short phrases.

Everything is generated from the small word lists below with a seeded ``random.Random``, so the same seed gives
the same sentences on any machine; no data is downloaded. Written forms use digits and symbols on purpose
("$12.50", "March 3, 2021", "7:45 am", "15%"): stage 01 reads them through audiopd's normaliser, and the
teachers are given the normalised words, so their audio and our frontend agree on what is said.
"""

from __future__ import annotations

import random
from collections.abc import Callable

FIRST = ("Anna", "Ben", "Clara", "Daniel", "Elena", "Frank", "Grace", "Henry", "Isabel", "Jack", "Karen", "Leo",
         "Maria", "Nathan", "Olivia", "Peter", "Rachel", "Samuel", "Sophie", "Thomas", "Victor", "Wendy", "Aaron",
         "Bella", "Carlos", "Diana", "Ethan", "Fiona", "George", "Hannah", "Ivan", "Julia", "Kevin", "Laura",
         "Martin", "Nina", "Oscar", "Paula", "Quentin", "Rosa", "Simon", "Tara", "Uma", "Walter", "Yusuf", "Zoe",
         "Priya", "Kenji", "Amara", "Mateo", "Ingrid", "Tomas", "Leila", "Omar", "Hugo", "Mei", "Ravi", "Freya")
LAST = ("Smith", "Johnson", "Brown", "Garcia", "Miller", "Davis", "Wilson", "Anderson", "Taylor", "Moore",
        "Jackson", "Martin", "Lee", "Thompson", "White", "Harris", "Clark", "Lewis", "Robinson", "Walker", "Young",
        "Allen", "King", "Wright", "Scott", "Green", "Baker", "Adams", "Nelson", "Hill", "Campbell", "Mitchell",
        "Roberts", "Carter", "Phillips", "Evans", "Turner", "Torres", "Parker", "Collins", "Edwards", "Stewart",
        "Morris", "Murphy", "Cook", "Rogers", "Morgan", "Cooper", "Peterson", "Reed", "Bailey", "Kelly", "Howard",
        "Nakamura", "Patel", "Kowalski", "Fischer", "Okafor", "Lindqvist", "Rossi", "Dubois", "Novak")
CITIES = ("Boston", "Chicago", "Denver", "Seattle", "Atlanta", "Dallas", "Phoenix", "Portland", "Austin",
          "London", "Paris", "Berlin", "Madrid", "Rome", "Dublin", "Toronto", "Sydney", "Tokyo", "Lisbon",
          "Vienna", "Oslo", "Prague", "Edinburgh", "Manchester", "Nairobi", "Cairo", "Mumbai", "Montreal")
PLACES = ("the library", "the station", "the market", "the office", "the harbour", "the museum", "the park",
          "the hospital", "the bakery", "the airport", "the school", "the garden", "the beach", "the theatre")
THINGS = ("the report", "the package", "the tickets", "the keys", "the letter", "the old piano", "the bicycle",
          "the map", "the recipe", "the camera", "the umbrella", "the blue notebook", "the contract", "the gift")
DOING = ("reading a book", "cooking dinner", "fixing the roof", "painting the fence", "walking the dog",
         "writing a letter", "planting tomatoes", "cleaning the kitchen", "learning French", "playing chess")
PAST = ("found", "lost", "sent", "opened", "borrowed", "forgot", "carried", "painted", "ordered", "returned",
        "signed", "packed", "fixed", "sold", "bought")
ADJ = ("wonderful", "strange", "beautiful", "terrible", "amazing", "ridiculous", "delicious", "brilliant",
       "awful", "lovely", "incredible", "quiet", "huge", "tiny", "perfect")
DAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
MONTHS = ("January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December")
UNITS = ("km", "kg", "m", "cm", "miles", "hours", "minutes", "pages", "people", "dollars")

Gen = Callable[[random.Random], str]


def _name(r: random.Random) -> str:
    return f"{r.choice(FIRST)} {r.choice(LAST)}" if r.random() < 0.5 else r.choice(FIRST)


def _money(r: random.Random) -> str:
    style = r.random()
    if style < 0.4:
        return f"${r.randint(1, 99)}.{r.randint(1, 99):02d}"
    if style < 0.7:
        return f"${r.randint(100, 9999):,}"
    if style < 0.85:
        return f"\u00a3{r.randint(2, 500)}"
    return f"${r.randint(1, 9)}.{r.randint(1, 9)} million"


def _date(r: random.Random) -> str:
    month, day, year = r.choice(MONTHS), r.randint(1, 28), r.randint(1890, 2030)
    style = r.random()
    if style < 0.4:
        return f"{month} {day}, {year}"
    if style < 0.7:
        return f"{day} {month} {year}"
    if style < 0.85:
        return f"{month} {day}"
    return f"{year}-{MONTHS.index(month) + 1:02d}-{day:02d}"


def _time(r: random.Random) -> str:
    return f"{r.randint(1, 12)}:{r.choice(['00', '15', '30', '45', '05', '20', '50'])} {r.choice(['am', 'pm'])}"


def _quantity(r: random.Random) -> str:
    value = r.choice([str(r.randint(2, 99)), f"{r.randint(1, 9)}.{r.randint(1, 9)}", f"{r.randint(100, 99999):,}"])
    return f"{value} {r.choice(UNITS)}"


QUESTIONS: tuple[Gen, ...] = (
    lambda r: f"Did {_name(r)} really {r.choice(['leave', 'call', 'win', 'stay', 'agree'])} last {r.choice(DAYS)}?",
    lambda r: f"Where did you put {r.choice(THINGS)}?",
    lambda r: f"Have you ever been to {r.choice(CITIES)}?",
    lambda r: f"Why is {r.choice(PLACES)} closed today?",
    lambda r: f"How long does it take to get from {r.choice(CITIES)} to {r.choice(CITIES)}?",
    lambda r: f"Could you tell {_name(r)} that {r.choice(THINGS)} is ready?",
    lambda r: f"Who {r.choice(PAST)} {r.choice(THINGS)}?",
    lambda r: f"Is {r.choice(FIRST)} still {r.choice(DOING)}?",
    lambda r: f"What time does {r.choice(PLACES)} open on {r.choice(DAYS)}?",
    lambda r: f"Would you rather live in {r.choice(CITIES)} or in {r.choice(CITIES)}?",
    lambda r: f"Are you sure it was {r.choice(ADJ)}?",
    lambda r: f"Which one of you {r.choice(PAST)} {r.choice(THINGS)} yesterday?",
    lambda r: f"When will {_name(r)} be back from {r.choice(CITIES)}?",
    lambda r: f"Do you know why {r.choice(FIRST)} {r.choice(PAST)} {r.choice(THINGS)}?",
    lambda r: f"Can we meet at {r.choice(PLACES)} after lunch?",
)
EXCLAMATIONS: tuple[Gen, ...] = (
    lambda r: f"What a {r.choice(ADJ)} day!",
    lambda r: f"Watch out, {r.choice(FIRST)}!",
    lambda r: f"I can't believe you {r.choice(PAST)} {r.choice(THINGS)}!",
    lambda r: f"That was absolutely {r.choice(ADJ)}!",
    lambda r: f"Oh no, {r.choice(THINGS)} is gone!",
    lambda r: f"Congratulations, {_name(r)}!",
    lambda r: f"Hurry up, the train to {r.choice(CITIES)} is leaving!",
    lambda r: f"Stop {r.choice(DOING)} and come here right now!",
    lambda r: f"How {r.choice(ADJ)} this is!",
    lambda r: f"Wow, {r.choice(PLACES)} looks {r.choice(ADJ)} tonight!",
)
NUMBERS: tuple[Gen, ...] = (
    lambda r: f"The bill came to {_money(r)}.",
    lambda r: f"{_name(r)} was born on {_date(r)}.",
    lambda r: f"The train to {r.choice(CITIES)} leaves at {_time(r)}.",
    lambda r: f"We paid {_money(r)} for {r.choice(THINGS)}.",
    lambda r: f"The meeting moved to {r.choice(DAYS)}, {_date(r)}, at {_time(r)}.",
    lambda r: f"About {r.randint(2, 99)}% of the people agreed.",
    lambda r: f"It is {_quantity(r)} from {r.choice(PLACES)}.",
    lambda r: f"She finished {r.choice(['1st', '2nd', '3rd', '4th', '5th', '11th', '21st'])} out of {r.randint(12, 400)}.",
    lambda r: f"Prices rose by {r.randint(1, 9)}.{r.randint(1, 9)}% in {r.randint(1950, 2029)}.",
    lambda r: f"Room {r.randint(100, 999)} is on floor {r.randint(2, 40)}.",
    lambda r: f"Is it true that {r.choice(THINGS)} costs {_money(r)}?",
    lambda r: f"The {r.choice(['1960s', '1980s', '1990s', '1920s'])} were {r.choice(ADJ)} years.",
    lambda r: f"Only {r.randint(2, 9999):,} tickets were sold on {_date(r)}!",
    lambda r: f"Chapter {r.randint(2, 40)} starts on page {r.randint(10, 900)}.",
)
NAMES: tuple[Gen, ...] = (
    lambda r: f"{_name(r)} and {_name(r)} met in {r.choice(CITIES)}.",
    lambda r: f"Please ask {r.choice(FIRST)} {r.choice(LAST)} to call {r.choice(FIRST)}.",
    lambda r: f"{r.choice(FIRST)} told {r.choice(FIRST)} that {r.choice(FIRST)} had {r.choice(PAST)} {r.choice(THINGS)}.",
    lambda r: f"My neighbour, {_name(r)}, moved to {r.choice(CITIES)} last year.",
    lambda r: f"Doctor {r.choice(LAST)} will see you now, {r.choice(['Mr.', 'Mrs.', 'Ms.'])} {r.choice(LAST)}.",
    lambda r: f"The {r.choice(LAST)} family spent the summer in {r.choice(CITIES)}.",
)
SHORT: tuple[Gen, ...] = (
    lambda r: r.choice(["Thank you.", "Good night.", "Not really.", "Of course.", "Yes, please.", "No way!",
                        "See you soon.", "Why not?", "Excuse me?", "Well done!", "Right away.", "Me too.",
                        "Good morning.", "Never mind.", "Really?", "All right.", "Absolutely not!"]),
    lambda r: f"Hello, {r.choice(FIRST)}.",
    lambda r: f"Thanks, {r.choice(FIRST)}!",
    lambda r: f"It's {r.choice(ADJ)}.",
    lambda r: f"See you on {r.choice(DAYS)}.",
    lambda r: f"Where is {r.choice(FIRST)}?",
)
KINDS: dict[str, tuple[Gen, ...]] = {
    "question": QUESTIONS, "exclamation": EXCLAMATIONS, "number": NUMBERS, "name": NAMES, "short": SHORT,
}


def generate(kind: str, count: int, seed: int) -> list[str]:
    """``count`` written sentences of ``kind`` (duplicates possible; stage 01 de-duplicates)."""
    templates = KINDS[kind]
    rng = random.Random(f"{kind}:{seed}")
    return [rng.choice(templates)(rng) for _ in range(count)]


def join_long(sentences: list[str], min_words: int, max_words: int, seed: int) -> list[str]:
    """Long sentences: consecutive runs of short ones joined into one utterance of min..max words."""
    rng = random.Random(f"long:{seed}")
    order = list(sentences)
    rng.shuffle(order)
    out, current = [], []
    for sentence in order:
        current.append(sentence)
        words = sum(len(s.split()) for s in current)
        if words >= min_words:
            if words <= max_words:
                out.append(" ".join(current))
            current = []
    return out
