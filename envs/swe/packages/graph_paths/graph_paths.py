"""Breadth first search and shortest paths on small graphs."""


def make_graph(edges, directed=False):
    """Build a dict from each node to its neighbours."""
    graph = {}
    for start, end in edges:
        graph.setdefault(start, []).append(end)
        graph.setdefault(end, [])
        if not directed:
            graph[end].append(start)
    return graph


def breadth_first(graph, start):
    """Nodes in the order a breadth first search visits them."""
    seen = [start]
    queue = [start]
    while queue:
        node = queue.pop(0)
        for neighbour in sorted(graph.get(node, [])):
            if neighbour not in seen:
                seen.append(neighbour)
                queue.append(neighbour)
    return seen


def walk_back(parents, node):
    path = []
    while node is not None:
        path.append(node)
        node = parents[node]
    return path[::-1]


def shortest_path(graph, start, goal):
    """A path with the fewest edges, as a list of nodes, or None."""
    parents = {start: None}
    queue = [start]
    while queue:
        node = queue.pop(0)
        if node == goal:
            return walk_back(parents, node)
        for neighbour in sorted(graph.get(node, [])):
            if neighbour not in parents:
                parents[neighbour] = node
                queue.append(neighbour)
    return None


def has_path(graph, start, goal):
    return shortest_path(graph, start, goal) is not None


def components(graph):
    """Connected parts of an undirected graph, each sorted."""
    parts = []
    done = set()
    for node in sorted(graph):
        if node not in done:
            part = sorted(breadth_first(graph, node))
            done.update(part)
            parts.append(part)
    return parts


def cheapest_path(costs, start, goal):
    """Dijkstra on a dict of dicts of edge costs: (cost, path)."""
    best = {start: 0}
    parents = {start: None}
    todo = [start]
    while todo:
        node = min(todo, key=lambda item: best[item])
        todo.remove(node)
        if node == goal:
            return best[goal], walk_back(parents, goal)
        for neighbour, cost in costs.get(node, {}).items():
            new_cost = best[node] + cost
            if neighbour not in best or new_cost < best[neighbour]:
                best[neighbour] = new_cost
                parents[neighbour] = node
                if neighbour not in todo:
                    todo.append(neighbour)
    return None


def degrees(graph):
    return {node: len(graph[node]) for node in graph}
