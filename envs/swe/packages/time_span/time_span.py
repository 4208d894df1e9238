"""Parse, format and add time spans such as 1h30m."""

UNITS = {"d": 86400, "h": 3600, "m": 60, "s": 1}


def parse_span(text):
    """Turn text like 1h30m or 2d 4h into seconds."""
    text = text.replace(" ", "").lower()
    if not text:
        raise ValueError("empty span")
    total = 0
    digits = ""
    for char in text:
        if char.isdigit():
            digits += char
        elif char in UNITS:
            if not digits:
                raise ValueError("unit without a number")
            total += int(digits) * UNITS[char]
            digits = ""
        else:
            raise ValueError("unknown unit: " + char)
    if digits:
        total += int(digits)
    return total


def format_span(seconds):
    """Format seconds with the largest units first, like 1h30m."""
    if seconds == 0:
        return "0s"
    parts = []
    for unit, size in UNITS.items():
        if seconds >= size:
            count = seconds // size
            seconds -= count * size
            parts.append(str(count) + unit)
    return "".join(parts)


def format_clock(seconds):
    """Format seconds as H:MM:SS."""
    if seconds < 0:
        raise ValueError("negative span")
    hours = seconds // 3600
    minutes = seconds % 3600 // 60
    rest = seconds % 60
    return str(hours) + ":" + two_digits(minutes) + ":" + two_digits(rest)


def two_digits(number):
    return str(number).rjust(2, "0")


def parse_clock(text):
    """Turn H:MM:SS or MM:SS into seconds."""
    pieces = [int(piece) for piece in text.split(":")]
    if len(pieces) == 2:
        pieces.insert(0, 0)
    if len(pieces) != 3:
        raise ValueError("expected H:MM:SS")
    hours, minutes, seconds = pieces
    if minutes > 59 or seconds > 59:
        raise ValueError("minutes and seconds must be below 60")
    return hours * 3600 + minutes * 60 + seconds


def add_spans(*spans):
    return format_span(sum(parse_span(span) for span in spans))


def split_evenly(seconds, parts):
    """Split into whole seconds; the first parts get the rest."""
    if parts <= 0:
        raise ValueError("parts must be positive")
    size, extra = divmod(seconds, parts)
    return [size + 1 if index < extra else size for index in range(parts)]
