"""Structures for structured inference: MAP, marginals and their backward passes.

Every structure implements the contract of :class:`Structure` (see its module
for how to add your own), which is all that SparseMAP
(:mod:`sksparse_struct.inference`) and the structured losses rely on.
"""

from ._base import CompiledOracle, Parts, Structure, UnaryStructure
from ._budget import Budget
from ._head_automaton import GrandparentHeadAutomaton, HeadAutomaton
from ._matching import Matching
from ._sequence import Sequence
from ._sibling_tree import ProjectiveSiblingTree
from ._tree import DependencyTree
from ._xor import XOR

__all__ = [
    "Budget",
    "CompiledOracle",
    "DependencyTree",
    "GrandparentHeadAutomaton",
    "HeadAutomaton",
    "Matching",
    "Parts",
    "ProjectiveSiblingTree",
    "Sequence",
    "Structure",
    "UnaryStructure",
    "XOR",
]
