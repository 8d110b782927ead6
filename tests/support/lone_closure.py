"""A system without states, as a user writes it: a loop closure alone, between two given motions."""

#: the system file: the closure's two parts 0.01 m apart along x (its spring: 1 N)
LONE_CLOSURE = """
record = ["lc.l.w", "lc.r.w"]
[units.lc]
model = "loop_closure"
K = [[100, 0, 0, 0, 0, 0], [0, 100, 0, 0, 0, 0], [0, 0, 100, 0, 0, 0], [0, 0, 0, 10, 0, 0], [0, 0, 0, 0, 10, 0], [0, 0, 0, 0, 0, 10]]
D = [[1, 0, 0, 0, 0, 0], [0, 1, 0, 0, 0, 0], [0, 0, 1, 0, 0, 0], [0, 0, 0, 1, 0, 0], [0, 0, 0, 0, 1, 0], [0, 0, 0, 0, 0, 1]]
[inputs]
"lc.l.m" = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0.01, 0, 0, 0, 0, 0]
"lc.r.m" = [0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]
"""
