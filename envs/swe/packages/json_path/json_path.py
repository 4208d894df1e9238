"""Get and set values in nested dicts and lists by paths like a.b[0]."""


def split_path(path):
    """Turn a.b[2].c into ["a", "b", 2, "c"]."""
    parts = []
    name = ""
    index = 0
    while index < len(path):
        char = path[index]
        if char == ".":
            if name:
                parts.append(name)
                name = ""
            index += 1
        elif char == "[":
            if name:
                parts.append(name)
                name = ""
            end = path.index("]", index)
            parts.append(int(path[index + 1:end]))
            index = end + 1
        else:
            name += char
            index += 1
    if name:
        parts.append(name)
    return parts


def get_path(data, path, default=None):
    """The value at path, or default when any step is missing."""
    current = data
    for part in split_path(path):
        if isinstance(part, int):
            if not isinstance(current, list):
                return default
            if part >= len(current) or part < -len(current):
                return default
        elif not isinstance(current, dict) or part not in current:
            return default
        current = current[part]
    return current


def has_path(data, path):
    missing = object()
    return get_path(data, path, missing) is not missing


def set_path(data, path, value):
    """Set a value, making dicts on the way for missing names."""
    parts = split_path(path)
    if not parts:
        raise ValueError("empty path")
    current = data
    for part in parts[:-1]:
        if isinstance(part, int):
            current = current[part]
        else:
            current = current.setdefault(part, {})
    current[parts[-1]] = value
    return data


def join_path(parts):
    """Turn ["a", 0, "b"] into a[0].b."""
    text = ""
    for part in parts:
        if isinstance(part, int):
            text += "[" + str(part) + "]"
        elif text:
            text += "." + part
        else:
            text = part
    return text


def all_paths(data, prefix=()):
    """Every path to a value that is not a dict or a list."""
    if isinstance(data, dict):
        paths = []
        for key in data:
            paths.extend(all_paths(data[key], prefix + (key,)))
        return paths
    if isinstance(data, list):
        paths = []
        for index, item in enumerate(data):
            paths.extend(all_paths(item, prefix + (index,)))
        return paths
    return [join_path(prefix)]
