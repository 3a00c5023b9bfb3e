"""Personal data: the checks that tell a card, an identity number, an IBAN or a phone number from any other
number (issuer prefixes and lengths, check digits, real dates). The patterns that use them are in
`secret_patterns.py`."""

from __future__ import annotations

import re
from typing import Callable


def digits_of(value: str) -> str:
    return "".join(c for c in value if c.isdigit())


def luhn(digits: str) -> bool:
    total = 0
    for i, ch in enumerate(reversed(digits)):
        d = int(ch)
        if i % 2:
            d = d * 2 - 9 if d > 4 else d * 2
        total += d
    return total % 10 == 0


def card_number(value: str) -> bool:
    """A payment card number: an issuer's prefix and length (Visa 13/16/19, Amex 15, Mastercard, UnionPay, JCB,
    Discover, Diners, Maestro), the Luhn check digit, and when grouped one separator between groups of 3-7 digits
    after a first group of 4 (4-4-4-4, 4-6-5, 4-4-4-4-3)."""
    digits = digits_of(value)
    seps = {c for c in value if not c.isdigit()}
    if len(seps) > 1:
        return False
    if seps:
        groups = value.split(seps.pop())
        if len(groups[0]) != 4 or any(not 3 <= len(g) <= 7 for g in groups[1:]):
            return False
    n, head = len(digits), digits[:2]
    if digits[0] == "4":
        issuer = n in (13, 16, 19)
    elif head in ("34", "37"):
        issuer = n == 15
    elif digits[0] == "2":  # Mastercard 2-series, Mir
        issuer = n == 16 and (2221 <= int(digits[:4]) <= 2720 or 2200 <= int(digits[:4]) <= 2204)
    elif digits[0] == "3":
        issuer = head in ("30", "35", "36", "38", "39") and 14 <= n <= 19
    elif digits[0] in "56" or head == "81":  # Mastercard, Maestro, Discover, UnionPay (62, 81), RuPay
        issuer = 16 <= n <= 19
    else:
        issuer = False
    return issuer and luhn(digits)


_CN_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


def cn_resident_id(value: str) -> bool:
    """A PRC resident identity number: a real birth date and the ISO 7064 MOD 11-2 check character."""
    import datetime

    v = value.upper()
    try:
        datetime.date(int(v[6:10]), int(v[10:12]), int(v[12:14]))
    except ValueError:
        return False
    total = sum(int(c) * w for c, w in zip(v[:17], _CN_ID_WEIGHTS))
    return "10X98765432"[total % 11] == v[17]


def hk_id(value: str) -> bool:
    """A Hong Kong identity card number, "A123456(3)": its check digit."""
    m = re.fullmatch(r"([A-Z]{1,2})(\d{6})\s?\(([0-9A])\)", value)
    if not m:
        return False
    letters, digits, check = m.groups()
    values = [36] * (2 - len(letters)) + [ord(c) - 55 for c in letters] + [int(c) for c in digits]
    c = (11 - sum(v * w for v, w in zip(values, range(9, 1, -1))) % 11) % 11
    return check == ("A" if c == 10 else str(c))


_TW_LETTERS = "ABCDEFGHJKLMNPQRSTUVXYWZIO"  # 10, 11, ... in this order


def tw_id(value: str) -> bool:
    """A Taiwan national identification number, "A123456789": its check digit."""
    n = _TW_LETTERS.find(value[0]) + 10
    digits = [n // 10, n % 10] + [int(c) for c in value[1:]]
    return sum(d * w for d, w in zip(digits, (1, 9, 8, 7, 6, 5, 4, 3, 2, 1, 1))) % 10 == 0


def sg_nric(value: str) -> bool:
    """A Singapore NRIC / FIN, "S1234567D": its check letter."""
    digits = [int(c) for c in value[1:8]]
    total = sum(d * w for d, w in zip(digits, (2, 7, 6, 5, 4, 3, 2))) + (4 if value[0] in "TG" else 0)
    letters = "JZIHGFEDCBA" if value[0] in "ST" else "XWUTRQPNMLK"
    return value[0] in "STFG" and letters[total % 11] == value[8]


def br_cpf(value: str) -> bool:
    """A Brazilian CPF, "123.456.789-09": its two check digits (and not one digit repeated)."""
    d = [int(c) for c in digits_of(value)]
    if len(d) != 11 or len(set(d)) == 1:
        return False
    for n in (9, 10):
        check = sum(x * w for x, w in zip(d[:n], range(n + 1, 1, -1))) * 10 % 11 % 10
        if check != d[n]:
            return False
    return True


def es_dni(value: str) -> bool:
    """A Spanish DNI / NIE, "12345678Z" / "X1234567L": its check letter."""
    v = value.upper().replace("-", "")
    number = {"X": "0", "Y": "1", "Z": "2"}.get(v[0], v[0]) + v[1:-1]
    return number.isdigit() and "TRWAGMYFPDXBNJZSQVHLCKE"[int(number) % 23] == v[-1]


def _verhoeff(digits: str) -> bool:
    d = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
         (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
         (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
         (9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
    p = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
         (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
         (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8))
    c = 0
    for i, ch in enumerate(reversed(digits)):
        c = d[c][p[i % 8][int(ch)]]
    return c == 0


def aadhaar(value: str) -> bool:
    """An Indian Aadhaar number: 12 digits, not starting 0 or 1, its Verhoeff check digit."""
    digits = digits_of(value)
    return len(digits) == 12 and digits[0] not in "01" and _verhoeff(digits)


def kr_rrn(value: str) -> bool:
    """A South Korean resident registration number, "YYMMDD-GNNNNNC": a real date and a plausible gender digit."""
    import datetime

    digits = digits_of(value)
    century = {"1": 1900, "2": 1900, "5": 1900, "6": 1900, "3": 2000, "4": 2000, "7": 2000, "8": 2000,
               "9": 1800, "0": 1800}[digits[6]]
    try:
        datetime.date(century + int(digits[:2]), int(digits[2:4]), int(digits[4:6]))
    except ValueError:
        return False
    return True


def ca_sin(value: str) -> bool:
    digits = digits_of(value)
    return len(digits) == 9 and digits[0] not in "08" and luhn(digits)


def iban(value: str) -> bool:
    """An IBAN: its length and its mod-97 check."""
    v = value.replace(" ", "").upper()
    if not 15 <= len(v) <= 34:
        return False
    moved = v[4:] + v[:4]
    return int("".join(str(int(c, 36)) for c in moved)) % 97 == 1

def enough_digits(low: int, high: int = 40) -> Callable[[str], bool]:
    return lambda value: low <= len(digits_of(value)) <= high


def phone_number(value: str) -> bool:
    """A phone number said with a label: 7-15 digits, not a date, a time or a version."""
    digits = digits_of(value)
    return 7 <= len(digits) <= 15 and not re.search(r"\d{4}[\-/.]\d{1,2}[\-/.]\d{1,2}|\d\.\d+\.\d", value)
