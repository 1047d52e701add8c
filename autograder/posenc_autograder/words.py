"""How the grader writes a count in a sentence someone reads: "1 notebook", "2 notebooks", never "notebook(s)"."""


def count(number: float, singular: str, plural: str | None = None) -> str:
    """number with its noun in agreement (plural: singular + "s" unless given); a fraction such as 0.5 is plural."""
    return f"{number:g} {singular if number == 1 else plural or singular + 's'}"


def listed(items: list[str]) -> str:
    """'a', 'a and b', 'a, b and c': items in a sentence."""
    return " and ".join(items) if len(items) < 3 else ", ".join(items[:-1]) + f" and {items[-1]}"
