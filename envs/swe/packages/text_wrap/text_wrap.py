"""Wrap, fill, center and shorten plain text."""


def wrap_words(text, width):
    """Break text into lines of at most width characters."""
    if width < 1:
        raise ValueError("width must be positive")
    lines = []
    current = ""
    for word in text.split():
        while len(word) > width:
            if current:
                lines.append(current)
                current = ""
            lines.append(word[:width])
            word = word[width:]
        if not current:
            current = word
        elif len(current) + 1 + len(word) <= width:
            current = current + " " + word
        else:
            lines.append(current)
            current = word
    if current:
        lines.append(current)
    return lines


def fill(text, width):
    return "\n".join(wrap_words(text, width))


def center(text, width, pad=" "):
    """Center text in width characters; extra space goes right."""
    if len(text) >= width:
        return text
    space = width - len(text)
    left = space // 2
    right = space - left
    return pad * left + text + pad * right


def justify(line, width):
    """Stretch a line to width by widening gaps from the left."""
    words = line.split()
    if len(words) < 2:
        return line.ljust(width)
    gaps = len(words) - 1
    spaces = width - sum(len(word) for word in words)
    size, extra = divmod(spaces, gaps)
    parts = []
    for index, word in enumerate(words[:-1]):
        gap = size + (1 if index < extra else 0)
        parts.append(word + " " * gap)
    parts.append(words[-1])
    return "".join(parts)


def shorten(text, limit, tail="..."):
    """Cut text to at most limit characters, ending with tail."""
    if len(text) <= limit:
        return text
    if limit <= len(tail):
        return tail[:limit]
    return text[:limit - len(tail)].rstrip() + tail


def indent(text, prefix="    "):
    """Put prefix before every line that is not empty."""
    lines = []
    for line in text.split("\n"):
        if line:
            lines.append(prefix + line)
        else:
            lines.append(line)
    return "\n".join(lines)


def count_lines(text, width):
    return len(wrap_words(text, width))


def longest_line(text):
    lines = text.split("\n")
    return max(len(line) for line in lines)
