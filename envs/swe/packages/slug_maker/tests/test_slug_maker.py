from slug_maker import camel_to_snake, initials, kebab_to_snake, slugify
from slug_maker import snake_to_camel, title_case, unique_slug


def test_slugify_basic():
    assert slugify("Hello World") == "hello-world"
    assert slugify("  Hello,   World!  ") == "hello-world"


def test_slugify_symbols():
    assert slugify("C3PO & R2D2") == "c3po-r2d2"
    assert slugify("caf\u00e9 menu") == "caf-menu"
    assert slugify("!!!") == ""


def test_slugify_separator():
    assert slugify("Hello World", "_") == "hello_world"


def test_snake_to_camel():
    assert snake_to_camel("parse_http_request") == "parseHttpRequest"
    assert snake_to_camel("Name") == "name"
    assert snake_to_camel("__private_value") == "privateValue"
    assert snake_to_camel("___") == ""


def test_camel_to_snake():
    assert camel_to_snake("parseHttpRequest") == "parse_http_request"
    assert camel_to_snake("Hello") == "hello"
    assert camel_to_snake("already_Snake") == "already_snake"
    assert camel_to_snake("plain") == "plain"


def test_title_case():
    assert title_case("the lord of the rings") == "The Lord of the Rings"
    assert title_case("war and peace") == "War and Peace"
    assert title_case("what it is about") == "What It Is About"
    assert title_case("a tale of") == "A Tale Of"


def test_unique_slug():
    assert unique_slug("My Post", set()) == "my-post"
    assert unique_slug("My Post", {"my-post"}) == "my-post-2"
    taken = {"my-post", "my-post-2", "my-post-3"}
    assert unique_slug("My Post", taken) == "my-post-4"


def test_initials():
    assert initials("ada lovelace") == "AL"
    assert initials("  grace  brewster hopper ") == "GBH"


def test_kebab_to_snake():
    assert kebab_to_snake("Max-Line-Length") == "max_line_length"
