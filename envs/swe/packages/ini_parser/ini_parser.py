"""Read and write simple INI style config text."""


def parse_ini(text):
    """Parse INI text into a dict of sections, each a dict of keys."""
    sections = {}
    current = None
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("[") and line.endswith("]"):
            name = line[1:-1].strip()
            if not name:
                raise ValueError("empty section name on line %d" % number)
            current = sections.setdefault(name, {})
            continue
        if current is None:
            raise ValueError("key outside a section on line %d" % number)
        if "=" in line:
            key, value = line.split("=", 1)
        elif ":" in line:
            key, value = line.split(":", 1)
        else:
            raise ValueError("missing equals sign on line %d" % number)
        current[key.strip().lower()] = value.strip()
    return sections


def get_value(sections, section, key, default=None):
    """Return one value, or default when it is missing."""
    values = sections.get(section, {})
    return values.get(key.lower(), default)


def get_int(sections, section, key, default=0):
    value = get_value(sections, section, key)
    if value is None:
        return default
    return int(value)


def get_bool(sections, section, key, default=False):
    value = get_value(sections, section, key)
    if value is None:
        return default
    word = value.lower()
    if word in ("yes", "true", "on", "1"):
        return True
    if word in ("no", "false", "off", "0"):
        return False
    raise ValueError("not a yes or no value: " + value)


def get_list(sections, section, key):
    """Return a comma separated value as a list of words."""
    value = get_value(sections, section, key, "")
    return [part.strip() for part in value.split(",") if part.strip()]


def dump_ini(sections):
    """Write sections back to INI text with sorted names."""
    lines = []
    for name in sorted(sections):
        if lines:
            lines.append("")
        lines.append("[" + name + "]")
        for key in sorted(sections[name]):
            lines.append(key + " = " + sections[name][key])
    return "\n".join(lines) + "\n"


def merge_ini(base, extra):
    """A new dict with the values of extra over those of base."""
    merged = {}
    for name in list(base) + list(extra):
        merged.setdefault(name, {})
        merged[name].update(base.get(name, {}))
        merged[name].update(extra.get(name, {}))
    return merged
