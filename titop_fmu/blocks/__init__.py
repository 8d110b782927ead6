"""TITOP block models: pure functions of parameters, states and inputs (no FMI)."""

from .base import Block
from .body import RigidBody
from .closure import LoopClosure
from .flexible import FlexibleBody
from .floating_base import FloatingBase, ImposedMotionBase
from .joints import PrismaticBody, RevoluteBody, WeldedBody
from .modal import ModalData, ModalError

__all__ = ["Block", "RigidBody", "FlexibleBody", "ModalData", "ModalError", "FloatingBase", "ImposedMotionBase",
           "WeldedBody", "RevoluteBody", "PrismaticBody", "LoopClosure"]
