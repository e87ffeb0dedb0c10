"""Attribute names on the wire: the API's kebab-case for our snake_case fields."""


def kebab(name: str) -> str:
    return name.replace("_", "-")
