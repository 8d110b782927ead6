"""A two-link arm on a fixed base, written as a system file from the documentation alone:
what the command-line and export tests start from."""


def arm(record: str, axis2: str = "[0.0, 0.0, 1.0]") -> str:
    """The system file's text; ``record`` is its record list as TOML, ``axis2`` the second
    joint's axis (an oblique one turns the arm out of its plane)."""
    return f"""
links = [["base.c1", "link1.p"], ["link1.c1", "link2.p"]]
record = {record}

[simulation]
stop = 0.2
output_interval = 0.05

[units.base]
model = "imposed_motion_base_c1"
mass = 1.0
inertia = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]]
com = [0.0, 0.0, 0.0]
"c1.r" = [0.0, 0.0, 0.0]

{_link("link1", "[0.0, 0.0, 1.0]", "q0 = 0.3")}
{_link("link2", axis2)}
[inputs]
"base.p.a" = [0, 0, 0, 0, 0, 0]
"link2.c1.w" = [0, 0, 0, 0, 0, 0]
"""


def _link(name, axis, *more) -> str:
    """A link of 1 kg and 1 m on a revolute joint, its centre of mass halfway."""
    return "\n".join([f"[units.{name}]", 'model = "revolute_c1"', "mass = 1.0",
                      "inertia = [[0.1, 0.0, 0.0], [0.0, 0.01, 0.0], [0.0, 0.0, 0.1]]", "com = [0.0, -0.5, 0.0]",
                      '"c1.r" = [0.0, -1.0, 0.0]', f"axis = {axis}", *more]) + "\n"
