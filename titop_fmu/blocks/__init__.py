"""TITOP block models: pure functions of parameters, states and inputs (no FMI)."""

from .base import Block
from .body import RigidBody
from .closure import LoopClosure
from .floating_base import FloatingBase, ImposedMotionBase
from .joints import PrismaticBody, RevoluteBody, WeldedBody

__all__ = ["Block", "RigidBody", "FloatingBase", "ImposedMotionBase", "WeldedBody",
           "RevoluteBody", "PrismaticBody", "LoopClosure"]
