"""Parse and build URL query strings."""

SAFE = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.~"
HEX = "0123456789ABCDEF"


def encode_text(text):
    """Percent encode every character that is not safe."""
    parts = []
    for char in text:
        if char in SAFE:
            parts.append(char)
        elif char == " ":
            parts.append("+")
        else:
            for byte in char.encode("utf-8"):
                parts.append("%" + HEX[byte // 16] + HEX[byte % 16])
    return "".join(parts)


def decode_text(text):
    """Undo encode_text: a plus is a space, %XX is one byte."""
    data = bytearray()
    index = 0
    while index < len(text):
        char = text[index]
        if char == "+":
            data.append(32)
            index += 1
        elif char == "%":
            pair = text[index + 1:index + 3]
            if len(pair) != 2:
                raise ValueError("short percent escape")
            data.append(int(pair, 16))
            index += 3
        else:
            data.extend(char.encode("utf-8"))
            index += 1
    return data.decode("utf-8")


def parse_query(query):
    """Return a dict mapping each key to the list of its values."""
    if query.startswith("?"):
        query = query[1:]
    result = {}
    for part in query.split("&"):
        if not part:
            continue
        if "=" in part:
            key, value = part.split("=", 1)
        else:
            key, value = part, ""
        key = decode_text(key)
        result.setdefault(key, []).append(decode_text(value))
    return result


def build_query(params):
    """Build a query string; a list value repeats its key."""
    pairs = []
    for key in sorted(params):
        value = params[key]
        values = value if isinstance(value, list) else [value]
        for item in values:
            pairs.append(encode_text(key) + "=" + encode_text(str(item)))
    return "&".join(pairs)


def first_values(params):
    """Keep only the first value of each key."""
    return {key: values[0] for key, values in params.items() if values}


def split_url(url):
    """Split a URL into its path and its parsed query."""
    if "?" not in url:
        return url, {}
    path, query = url.split("?", 1)
    return path, parse_query(query)


def add_param(url, key, value):
    """Add one key and value to the query of a URL."""
    path, params = split_url(url)
    params.setdefault(key, []).append(str(value))
    return path + "?" + build_query(params)
