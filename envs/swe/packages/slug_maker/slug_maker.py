"""Make URL slugs and convert between naming styles."""

SMALL_WORDS = ("a", "an", "the", "of", "and", "or", "in", "to")


def slugify(text, sep="-"):
    """Lowercase words of letters and digits, joined by sep."""
    words = []
    current = []
    for char in text.lower():
        if char.isalnum() and char.isascii():
            current.append(char)
        elif current:
            words.append("".join(current))
            current = []
    if current:
        words.append("".join(current))
    return sep.join(words)


def snake_to_camel(name):
    parts = [part for part in name.split("_") if part]
    if not parts:
        return ""
    head = parts[0].lower()
    return head + "".join(part.capitalize() for part in parts[1:])


def camel_to_snake(name):
    chars = []
    for index, char in enumerate(name):
        if char.isupper():
            if index > 0 and name[index - 1] != "_":
                chars.append("_")
            chars.append(char.lower())
        else:
            chars.append(char)
    return "".join(chars)


def title_case(text):
    """Capitalize words, except small ones inside the title."""
    words = text.lower().split()
    result = []
    for index, word in enumerate(words):
        inner = 0 < index < len(words) - 1
        if inner and word in SMALL_WORDS:
            result.append(word)
        else:
            result.append(word[0].upper() + word[1:])
    return " ".join(result)


def unique_slug(text, taken):
    """A slug not in taken, adding -2, -3 and so on when needed."""
    base = slugify(text)
    if base not in taken:
        return base
    number = 2
    while base + "-" + str(number) in taken:
        number += 1
    return base + "-" + str(number)


def initials(name):
    return "".join(word[0].upper() for word in name.split())


def kebab_to_snake(name):
    return name.replace("-", "_").lower()
