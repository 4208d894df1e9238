"""Split and join comma separated rows with quoted fields."""


def split_row(line, sep=","):
    """Split one line into fields; double quotes protect separators."""
    fields = []
    current = []
    quoted = False
    index = 0
    while index < len(line):
        char = line[index]
        if quoted:
            if char != '"':
                current.append(char)
            elif line[index + 1:index + 2] == '"':
                current.append('"')
                index += 1
            else:
                quoted = False
        elif char == '"':
            quoted = True
        elif char == sep:
            fields.append("".join(current))
            current = []
        else:
            current.append(char)
        index += 1
    if quoted:
        raise ValueError("unclosed quote")
    fields.append("".join(current))
    return fields


def quote_field(field, sep=","):
    """Quote a field holding a separator, a quote or outer spaces."""
    needs = sep in field or '"' in field or field != field.strip()
    if not needs:
        return field
    return '"' + field.replace('"', '""') + '"'


def join_row(fields, sep=","):
    return sep.join(quote_field(str(field), sep) for field in fields)


def read_table(text, sep=","):
    """Read text with a header row into a list of dicts."""
    lines = [line for line in text.splitlines() if line.strip()]
    if not lines:
        return []
    header = split_row(lines[0], sep)
    rows = []
    for line in lines[1:]:
        values = split_row(line, sep)
        if len(values) != len(header):
            raise ValueError("wrong number of fields: " + line)
        rows.append(dict(zip(header, values)))
    return rows


def write_table(rows, header, sep=","):
    lines = [join_row(header, sep)]
    for row in rows:
        values = [row.get(name, "") for name in header]
        lines.append(join_row(values, sep))
    return "\n".join(lines) + "\n"


def column(rows, name):
    return [row[name] for row in rows]


def to_numbers(values):
    """Convert strings to int when possible, else to float."""
    numbers = []
    for value in values:
        text = value.strip()
        if text.lstrip("-").isdigit():
            numbers.append(int(text))
        else:
            numbers.append(float(text))
    return numbers


def column_total(rows, name):
    return sum(to_numbers(column(rows, name)))
