"""Run length encoding of text and lists."""


def runs(items):
    """Group equal neighbours into [item, count] pairs."""
    result = []
    for item in items:
        if result and result[-1][0] == item:
            result[-1][1] += 1
        else:
            result.append([item, 1])
    return result


def encode(text):
    """Encode text like aaab as 3a1b."""
    for char in text:
        if char.isdigit():
            raise ValueError("digits cannot be encoded")
    return "".join(str(count) + char for char, count in runs(text))


def decode(text):
    """Undo encode: 3a1b becomes aaab."""
    parts = []
    digits = ""
    for char in text:
        if char.isdigit():
            digits += char
        else:
            if not digits:
                raise ValueError("missing count before " + char)
            parts.append(char * int(digits))
            digits = ""
    if digits:
        raise ValueError("count at the end")
    return "".join(parts)


def encode_short(text):
    """Like encode, but a run of one has no count."""
    parts = []
    for char, count in runs(text):
        if count == 1:
            parts.append(char)
        else:
            parts.append(str(count) + char)
    return "".join(parts)


def decode_short(text):
    parts = []
    digits = ""
    for char in text:
        if char.isdigit():
            digits += char
        else:
            count = int(digits) if digits else 1
            parts.append(char * count)
            digits = ""
    return "".join(parts)


def expand(pairs):
    """Turn [item, count] pairs back into a list."""
    result = []
    for item, count in pairs:
        result.extend([item] * count)
    return result


def longest_run(items):
    """The item with the longest run and the run length."""
    best = None
    for item, count in runs(items):
        if best is None or count > best[1]:
            best = (item, count)
    return best


def ratio(text):
    """Length of the encoding over the length of the text."""
    if not text:
        return 0.0
    return len(encode(text)) / len(text)
