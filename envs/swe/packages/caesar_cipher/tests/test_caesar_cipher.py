import pytest

from caesar_cipher import crack, decode, encode, guess_shift, is_pangram
from caesar_cipher import letter_counts, rot13, shift_letter, vigenere


def test_shift_letter():
    assert shift_letter("a", 1) == "b"
    assert shift_letter("z", 1) == "a"
    assert shift_letter("C", 2) == "E"
    assert shift_letter("!", 5) == "!"
    assert shift_letter("a", -1) == "z"


def test_encode():
    assert encode("hello", 3) == "khoor"
    assert encode("Hello, World!", 3) == "Khoor, Zruog!"
    assert encode("xyz", 29) == "abc"


def test_decode():
    assert decode("khoor", 3) == "hello"
    assert decode(encode("Round Trip 42", 11), 11) == "Round Trip 42"


def test_rot13():
    assert rot13("Hello") == "Uryyb"
    assert rot13(rot13("Same Again")) == "Same Again"


def test_vigenere():
    assert vigenere("attack at dawn", "lemon") == "lxfopv ef rnhr"
    assert vigenere("ATTACK", "LEMON") == "LXFOPV"


def test_vigenere_back():
    secret = vigenere("Meet me at noon!", "key")
    assert vigenere(secret, "key", back=True) == "Meet me at noon!"


def test_vigenere_bad_key():
    with pytest.raises(ValueError):
        vigenere("text", "123")


def test_letter_counts():
    counts = letter_counts("Abba!")
    assert counts[0] == 2
    assert counts[1] == 2
    assert sum(counts) == 4
    assert len(counts) == 26


def test_guess_and_crack():
    plain = "we need the seventeen green trees here"
    secret = encode(plain, 7)
    assert guess_shift(secret) == 7
    assert crack(secret) == plain


def test_is_pangram():
    assert is_pangram("The quick brown fox jumps over the lazy dog")
    assert not is_pangram("hello world")
