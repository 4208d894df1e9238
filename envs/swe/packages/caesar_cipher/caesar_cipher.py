"""Caesar shifts, rot13 and the Vigenere cipher."""

LETTERS = "abcdefghijklmnopqrstuvwxyz"


def shift_letter(char, shift):
    """Shift one letter and keep its case; other chars stay."""
    lower = char.lower()
    if lower not in LETTERS:
        return char
    index = (LETTERS.index(lower) + shift) % 26
    moved = LETTERS[index]
    return moved.upper() if char.isupper() else moved


def encode(text, shift):
    return "".join(shift_letter(char, shift) for char in text)


def decode(text, shift):
    return encode(text, -shift)


def rot13(text):
    return encode(text, 13)


def vigenere(text, key, back=False):
    """Shift each letter by the next letter of key."""
    shifts = [LETTERS.index(char) for char in key.lower() if char in LETTERS]
    if not shifts:
        raise ValueError("key needs a letter")
    result = []
    position = 0
    for char in text:
        if char.lower() in LETTERS:
            shift = shifts[position % len(shifts)]
            if back:
                shift = -shift
            result.append(shift_letter(char, shift))
            position += 1
        else:
            result.append(char)
    return "".join(result)


def letter_counts(text):
    """How often each letter from a to z appears."""
    counts = [0] * 26
    for char in text.lower():
        if char in LETTERS:
            counts[LETTERS.index(char)] += 1
    return counts


def guess_shift(text):
    """Guess the shift, taking the most common letter to be e."""
    counts = letter_counts(text)
    top = counts.index(max(counts))
    return (top - LETTERS.index("e")) % 26


def crack(text):
    return decode(text, guess_shift(text))


def is_pangram(text):
    return min(letter_counts(text)) > 0
