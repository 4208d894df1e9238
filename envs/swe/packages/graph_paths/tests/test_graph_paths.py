from graph_paths import breadth_first, cheapest_path, components, degrees
from graph_paths import has_path, make_graph, shortest_path

EDGES = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e")]

COSTS = {
    "a": {"b": 1, "c": 4},
    "b": {"c": 2, "d": 6},
    "c": {"d": 3},
    "d": {},
}


def test_make_graph_undirected():
    graph = make_graph(EDGES)
    assert sorted(graph["a"]) == ["b", "c"]
    assert sorted(graph["d"]) == ["b", "c", "e"]
    assert graph["e"] == ["d"]


def test_make_graph_directed():
    graph = make_graph(EDGES, directed=True)
    assert graph["a"] == ["b", "c"]
    assert graph["e"] == []
    assert graph["d"] == ["e"]


def test_breadth_first():
    graph = make_graph(EDGES)
    assert breadth_first(graph, "a") == ["a", "b", "c", "d", "e"]
    assert breadth_first(graph, "e") == ["e", "d", "b", "c", "a"]


def test_shortest_path():
    graph = make_graph(EDGES)
    assert shortest_path(graph, "a", "e") == ["a", "b", "d", "e"]
    assert shortest_path(graph, "c", "c") == ["c"]
    assert shortest_path(graph, "e", "a") == ["e", "d", "b", "a"]


def test_no_path():
    graph = make_graph(EDGES + [("x", "y")])
    assert shortest_path(graph, "a", "x") is None
    assert not has_path(graph, "a", "y")
    assert has_path(graph, "x", "y")


def test_directed_path():
    graph = make_graph(EDGES, directed=True)
    assert shortest_path(graph, "e", "a") is None
    assert shortest_path(graph, "a", "e") == ["a", "b", "d", "e"]


def test_components():
    graph = make_graph([(1, 2), (3, 4), (4, 5), (6, 6)])
    assert components(graph) == [[1, 2], [3, 4, 5], [6]]
    assert components({}) == []


def test_cheapest_path():
    assert cheapest_path(COSTS, "a", "d") == (6, ["a", "b", "c", "d"])
    assert cheapest_path(COSTS, "a", "c") == (3, ["a", "b", "c"])
    assert cheapest_path(COSTS, "a", "a") == (0, ["a"])


def test_cheapest_path_missing():
    assert cheapest_path(COSTS, "d", "a") is None


def test_degrees():
    graph = make_graph(EDGES)
    assert degrees(graph) == {"a": 2, "b": 2, "c": 2, "d": 3, "e": 1}
